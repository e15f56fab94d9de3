// The parts of a data-parallel step (StepOptions, docs/parallel.md): a batch's row groups, the sum of
// the groups' gradients in the fixed tree's order, and the reduction of gradients and step counts
// over the ranks. Single-process steps with one row group use none of it.
#pragma once

#include <dew/parallel.h>
#include <dew/train.h>

#include <optional>
#include <vector>

namespace dew::train {

// Refuses row groups that would not give every rank the same number of whole groups of equal rows,
// or (several ranks) a number per rank that is not a power of two — then the ranks' sums would not
// meet the one-process tree (NOTE [row groups]).
void check_row_groups(int64_t row_groups, int ranks);

// Rows [group * n, (group + 1) * n) of a batch of row_groups * n rows: every per-row tensor sliced, the
// counts of real tokens and rows those of the slice.
data::Batch batch_rows(const data::Batch& batch, int64_t group, int64_t row_groups);

// The sum of leaves — one gradient per parameter each, taken from the parameters' .grad() — in
// fixed_tree_sum's order over the leaves, holding log2(leaves) + 1 partial sums (a binary counter).
class GradientTree {
 public:
  explicit GradientTree(const std::vector<Param>& params) : params_(params) {}
  // Takes the parameters' gradients (zeros where one got none) as the next leaf; they are left unset.
  void add_leaf();
  // Sets each parameter's gradient to the leaves' sum.
  void finish();

 private:
  const std::vector<Param>& params_;
  std::vector<std::optional<std::vector<Tensor>>> levels_;  // levels_[i]: the sum of 2^i leaves
};

// Sums every parameter's gradient over the ranks (the communicator's fixed tree), in buckets started
// together; parameters without a gradient send zeros. Counts bytes sent and the wait into `out`.
void all_reduce_gradients(const std::vector<Param>& params, parallel::Communicator& world, StepResult& out);

// The step's counts and per-leaf losses summed over the ranks: tokens, images, targets, correct,
// expert loads; `leaf_losses` (loss, router loss per local leaf, in order) gathered so that every rank
// adds all G x A of them in one order. Sets out.loss and out.router_loss.
void reduce_step_results(parallel::Communicator* world, const std::vector<double>& leaf_losses,
                         int64_t leaves, StepResult& out);

}  // namespace dew::train
