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
  // The parameters' gradients now are the last leaf: each becomes the sum of every leaf. Per parameter
  // (once each, as backward completes it), or all that are left.
  void finish(size_t param);
  void finish();

 private:
  const std::vector<Param>& params_;
  std::vector<std::optional<std::vector<Tensor>>> levels_;  // levels_[i]: the sum of 2^i leaves
  std::vector<bool> finished_;
};

// The gradients' sum over the ranks of a data-parallel group, in buckets whose all-reduces start as
// backward completes their parameters (set_gradient_ready_hook) — in the bucket order, the same on
// every rank — and are waited for after it. The first step learns the order (rank 0's) and reduces
// after backward. Counts bytes sent and the wait into `out`.
class GradientReducer {
 public:
  GradientReducer(const std::vector<Param>& params, DataParallel& group, GradientTree* tree, StepResult& out);
  ~GradientReducer();  // the hooks removed, whatever happened
  // Before the rank's last backward of the step: from then on each completed gradient is final.
  void arm();
  // After it: every gradient reduced and set.
  void finish();

 private:
  struct Bucket {
    int owner = -1;               // ZeRO-2: the rank its gradients are reduced to; -1: every rank
    std::vector<int64_t> params;  // indices, in the ready order
    int64_t elements = 0, ready = 0;
    Tensor flat;
    std::unique_ptr<parallel::Work> work;
  };
  void disarm();              // the hooks removed
  void ready(int64_t param);  // its final local gradient into its bucket; full buckets started in order
  void start_ready_buckets();
  void poll();

  const std::vector<Param>& params_;
  DataParallel& group_;
  GradientTree* tree_;
  StepResult& out_;
  std::vector<Bucket> buckets_;
  std::vector<int64_t> bucket_of_, offset_of_;  // per parameter
  std::vector<bool> done_;
  std::vector<int64_t> seen_order_;  // the order gradients completed in here (learned on the first step)
  size_t next_start_ = 0;
};

// clip_grad_norm (train.h) of gradients sharded over `parts_on` (ZeRO-2: each rank holds its own
// parameters' gradients, the others none): the same norm and the same clipped bits as unsharded.
// Tensor parallelism: the parameters `counted` (empty: all) add their squares, summed over `parts_on`.
double clip_grad_norm(const std::vector<Param>& params, double max_norm, parallel::Communicator* parts_on,
                      const std::vector<bool>& counted = {});

// Sharded optimizer state: each parameter, as its owner updated it, sent to every other rank (one
// broadcast per owner). Counts the bytes this rank sent into `out`.
void share_updated_parameters(const std::vector<Param>& params, const DataParallel& group, StepResult& out);

// The step's counts and per-leaf losses summed over the ranks: tokens, images, targets, correct,
// expert loads; `leaf_losses` (loss, router loss per local leaf, in order) gathered so that every rank
// adds all G x A of them in one order. Sets out.loss and out.router_loss.
void reduce_step_results(parallel::Communicator* world, const std::vector<double>& leaf_losses,
                         int64_t leaves, StepResult& out);

}  // namespace dew::train
