// Row groups, the gradient tree and the reductions of a data-parallel step (data_parallel.h).
#include "train/data_parallel.h"

#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <numeric>

#include "core/autograd.h"

namespace dew::train {

// NOTE [row groups]
// A step's gradient is defined as a tree over row groups, not over ranks: the batch's rows split into
// G groups g0..g(G-1), each group's gradient computed by its own forward and backward, and the G
// gradients added in fixed_tree_sum's order (level by level, adjacent pairs, an odd last one carried
// up). With P ranks each holding G/P consecutive groups, a power of two, the first log2(G/P) levels of
// that tree pair groups within one rank — the rank's own binary counter (GradientTree) adds them in
// that order — and the levels above are the communicator's tree over the P ranks' sums. So 1 process
// with G groups, 2 with G/2 each and 4 with G/4 add every gradient element in the same order: the same
// bits. What a rank computes per group never depends on P either: the same rows, the same shapes.

void check_row_groups(int64_t row_groups, int ranks) {
  DEW_REQUIRE(row_groups >= 1 && row_groups % ranks == 0,
              "[train] parallel.row_groups {} on {} ranks; expected a multiple of the rank count (each "
              "rank takes the same number of row groups of every batch)",
              row_groups, ranks);
  DEW_REQUIRE(ranks == 1 || std::has_single_bit(uint64_t(row_groups / ranks)),
              "[train] parallel.row_groups {} on {} ranks gives each rank {} groups; expected a power of "
              "two per rank (1, 2, 4, ...), so that the ranks' sums meet in the one-process order",
              row_groups, ranks, row_groups / ranks);
}

data::Batch batch_rows(const data::Batch& batch, int64_t group, int64_t row_groups) {
  const Tensor& any = batch.images.defined() ? batch.images : batch.tokens;
  const int64_t rows = any.shape()[0];
  DEW_REQUIRE(rows % row_groups == 0,
              "[train] batch {} holds {} rows, which parallel.row_groups {} cannot split evenly; expected a "
              "batch size that is a multiple of the row groups",
              batch.index, rows, row_groups);
  const int64_t n = rows / row_groups, begin = group * n;
  const auto rows_of = [&](const Tensor& t) { return t.defined() ? t.slice(0, begin, begin + n) : t; };
  data::Batch out;
  out.index = batch.index;
  out.tokens = rows_of(batch.tokens);
  out.segment_ids = rows_of(batch.segment_ids);
  out.positions = rows_of(batch.positions);
  out.loss_mask = rows_of(batch.loss_mask);
  out.images = rows_of(batch.images);
  out.labels = rows_of(batch.labels);
  out.real_rows = std::clamp(batch.real_rows - begin, int64_t(0), n);
  if (out.segment_ids.defined()) {  // padding has segment id 0
    const Tensor ids = out.segment_ids.contiguous();
    for (int64_t i = 0; i < ids.numel(); ++i) out.real_tokens += ids.data<int64_t>()[i] != 0;
  } else if (out.tokens.defined()) {
    out.real_tokens = out.tokens.numel();
  }
  return out;
}

void GradientTree::add_leaf() {
  NoGrad no_grad;
  std::vector<Tensor> carry;
  for (const Param& p : params_) {
    Tensor g = p.tensor.grad();
    carry.push_back(g.defined() ? g : Tensor::zeros(p.tensor.shape(), p.tensor.dtype(), p.tensor.device()));
    Tensor(p.tensor).zero_grad();
  }
  // A binary counter: two sums of 2^i leaves make one of 2^(i+1), the earlier one on the left.
  size_t level = 0;
  for (; level < levels_.size() && levels_[level]; ++level) {
    for (size_t i = 0; i < carry.size(); ++i) carry[i] = add((*levels_[level])[i], carry[i]);
    levels_[level].reset();
  }
  if (level == levels_.size()) levels_.emplace_back();
  levels_[level] = std::move(carry);
}

void GradientTree::finish(size_t param) {
  NoGrad no_grad;
  if (finished_.empty()) finished_.assign(params_.size(), false);
  if (finished_[param]) return;
  finished_[param] = true;
  // The last leaf pushed through the counter and the partial sums left folded from the lowest level
  // up, each earlier one on the left: the same additions as fixed_tree_sum's levels with odd parts
  // carried up (a test checks every count to 9).
  Tensor p = params_[param].tensor;
  Tensor sum = p.grad().defined() ? p.grad() : Tensor::zeros(p.shape(), p.dtype(), p.device());
  for (const std::optional<std::vector<Tensor>>& partial : levels_)
    if (partial) sum = add((*partial)[param], sum);
  detail::autograd_meta(p).grad = sum;
}

void GradientTree::finish() {
  for (size_t i = 0; i < params_.size(); ++i) finish(i);
  levels_.clear();
  finished_.clear();
}

GradientReducer::GradientReducer(const std::vector<Param>& params, DataParallel& group, GradientTree* tree,
                                 StepResult& out)
    : params_(params), group_(group), tree_(tree), out_(out) {
  const int64_t n = int64_t(params.size());
  std::vector<int64_t> order = group.ready_order;
  if (int64_t(order.size()) != n) {
    // Not learned yet: the order backward usually takes — the head and final norm, the layers from the
    // last (layer_of_parameter), the embedding tables — so that the first step's buckets also fill and
    // leave in turn rather than wait for one another (each holding its gradients meanwhile).
    const auto stage = [&](int64_t i) {  // the earlier in backward, the larger
      const std::string& name = params[size_t(i)].name;
      const int64_t layer = layer_of_parameter(name);
      if (layer >= 0) return layer;
      return is_embedding_table(name) ? std::numeric_limits<int64_t>::min()
                                      : std::numeric_limits<int64_t>::max();
    };
    order.clear();
    for (int64_t i = n - 1; i >= 0; --i) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return stage(a) > stage(b); });
  }
  bucket_of_.assign(size_t(n), 0), offset_of_.assign(size_t(n), 0), done_.assign(size_t(n), false);
  const auto owner_of = [&](int64_t i) { return group.gradients_to_owners ? group.owner[size_t(i)] : -1; };
  for (const int64_t i : order) {
    const int64_t size = params[size_t(i)].tensor.numel();
    if (buckets_.empty() || owner_of(i) != buckets_.back().owner ||
        (buckets_.back().elements > 0 && buckets_.back().elements + size > group.bucket_elements)) {
      buckets_.emplace_back();
      buckets_.back().owner = owner_of(i);
    }
    Bucket& b = buckets_.back();
    bucket_of_[size_t(i)] = int64_t(buckets_.size()) - 1, offset_of_[size_t(i)] = b.elements;
    b.params.push_back(i);
    b.elements += size;
  }
}

GradientReducer::~GradientReducer() {
  disarm();
}

void GradientReducer::disarm() {
  for (const Param& p : params_) {
    Tensor leaf = p.tensor;
    set_gradient_ready_hook(leaf, {}, this);
  }
}

void GradientReducer::arm() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor leaf = params_[i].tensor;
    set_gradient_ready_hook(
        leaf, [this, i] { ready(int64_t(i)); }, this);
  }
}

void GradientReducer::ready(int64_t param) {
  if (done_[size_t(param)]) return;
  done_[size_t(param)] = true;
  seen_order_.push_back(param);
  NoGrad no_grad;
  if (tree_) tree_->finish(size_t(param));
  const Tensor& w = params_[size_t(param)].tensor;
  const Tensor g = w.grad();
  Bucket& b = buckets_[size_t(bucket_of_[size_t(param)])];
  // Allocated as its first gradient arrives (and, sharded, dropped once sent): never every bucket at once.
  if (!b.flat.defined()) b.flat = Tensor::empty({b.elements}, DType::f32);
  Tensor part = b.flat.slice(0, offset_of_[size_t(param)], offset_of_[size_t(param)] + w.numel());
  if (g.defined())
    part.copy_from(g.reshape({w.numel()}));
  else
    part.copy_from(Tensor::zeros({w.numel()}, DType::f32));
  Tensor(w).zero_grad();  // the bucket holds it now; finish() sets the reduced one
  ++b.ready;
  start_ready_buckets();
  poll();
}

void GradientReducer::start_ready_buckets() {
  // In bucket order only: every rank must start its collectives in one order.
  while (next_start_ < buckets_.size() &&
         buckets_[next_start_].ready == int64_t(buckets_[next_start_].params.size())) {
    Bucket& b = buckets_[next_start_++];
    const int ranks = group_.world->size();
    const int64_t shard = (b.elements + ranks - 1) / ranks;
    if (b.owner >= 0) {  // ZeRO-2: to the owner only
      if (group_.world->rank() != b.owner) out_.communicated_bytes += b.elements * int64_t(sizeof(float));
      b.work = group_.world->start_reduce_sum(b.flat, b.flat, b.owner);
      continue;
    }
    out_.communicated_bytes += 2 * int64_t(ranks - 1) * shard * int64_t(sizeof(float));
    b.work = group_.world->start_all_reduce_sum(b.flat);
  }
}

void GradientReducer::poll() {
  for (size_t k = 0; k < next_start_; ++k) {
    Bucket& b = buckets_[k];
    if (!b.work || !b.work->test()) continue;
    if (b.owner >= 0 && b.owner != group_.world->rank()) b.work.reset(), b.flat = Tensor();  // sent: freed
  }
}

void GradientReducer::finish() {
  disarm();                                                       // no more calls from backward
  for (size_t i = 0; i < params_.size(); ++i) ready(int64_t(i));  // those backward did not reach
  if (tree_) tree_->finish();
  const auto waiting = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_) {
    if (b.work) b.work->wait();
    if (b.owner >= 0 && b.owner != group_.world->rank()) {  // ZeRO-2: not this rank's to keep
      b.work.reset(), b.flat = Tensor();
      continue;
    }
    for (const int64_t i : b.params) {
      Tensor w = params_[size_t(i)].tensor;
      detail::autograd_meta(w).grad =
          b.flat.slice(0, offset_of_[size_t(i)], offset_of_[size_t(i)] + w.numel()).reshape(w.shape());
    }
  }
  out_.communication_wait_s +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count();
  if (group_.ready_order.size() != params_.size()) {  // the first step: rank 0's order, for every rank
    std::vector<double> order(seen_order_.begin(), seen_order_.end());
    Tensor t = Tensor::from_values(order, {int64_t(order.size())}, DType::f64);
    group_.world->broadcast(t, 0);
    group_.ready_order.clear();
    for (const double i : t.to_f64_vector()) group_.ready_order.push_back(int64_t(i));
  }
}

std::vector<int> owners(const std::vector<Param>& params, int ranks) {
  std::vector<size_t> largest_first(params.size());
  std::iota(largest_first.begin(), largest_first.end(), size_t(0));
  std::stable_sort(largest_first.begin(), largest_first.end(),
                   [&](size_t a, size_t b) { return params[a].tensor.numel() > params[b].tensor.numel(); });
  std::vector<int64_t> held(size_t(ranks), 0);
  std::vector<int> out(params.size(), 0);
  for (const size_t i : largest_first) {
    const int r = int(std::min_element(held.begin(), held.end()) - held.begin());
    out[i] = r;
    held[size_t(r)] += params[i].tensor.numel();
  }
  return out;
}

void share_updated_parameters(const std::vector<Param>& params, const DataParallel& group, StepResult& out) {
  NoGrad no_grad;
  parallel::Communicator& world = *group.world;
  for (int owner = 0; owner < world.size(); ++owner) {
    int64_t n = 0;
    for (size_t i = 0; i < params.size(); ++i)
      if (group.owner[i] == owner) n += params[i].tensor.numel();
    if (n == 0) continue;
    Tensor flat = Tensor::empty({n}, DType::f32);
    const auto each_owned = [&](const auto& visit) {
      int64_t at = 0;
      for (size_t i = 0; i < params.size(); ++i)
        if (group.owner[i] == owner) {
          Tensor w = params[i].tensor;
          visit(w, flat.slice(0, at, at + w.numel()));
          at += w.numel();
        }
    };
    if (world.rank() == owner) {
      each_owned([](const Tensor& w, Tensor part) { part.copy_from(w.reshape({w.numel()})); });
      out.communicated_bytes += int64_t(world.size() - 1) * n * int64_t(sizeof(float));
    }
    world.broadcast(flat, owner);
    if (world.rank() != owner)
      each_owned([](Tensor& w, const Tensor& part) { w.copy_from(part.reshape(w.shape())); });
  }
}

void reduce_step_results(parallel::Communicator* world, const std::vector<double>& leaf_losses,
                         int64_t leaves, StepResult& out) {
  std::vector<double> all = leaf_losses;
  if (world && world->size() > 1) {
    // Counts are integers: their sum is exact in any order.
    std::vector<double> counts = {double(out.tokens), double(out.images), double(out.targets),
                                  double(out.correct)};
    for (const std::vector<int64_t>& layer : out.expert_tokens)
      for (const int64_t n : layer) counts.push_back(double(n));
    Tensor summed = Tensor::from_values(counts, {int64_t(counts.size())}, DType::f64);
    world->all_reduce_sum(summed);
    const std::vector<double> total = summed.to_f64_vector();
    out.tokens = int64_t(total[0]), out.images = int64_t(total[1]);
    out.targets = int64_t(total[2]), out.correct = int64_t(total[3]);
    size_t at = 4;
    for (std::vector<int64_t>& layer : out.expert_tokens)
      for (int64_t& n : layer) n = int64_t(total[at++]);
    const Tensor local = Tensor::from_values(leaf_losses, {int64_t(leaf_losses.size())}, DType::f64);
    Tensor gathered = Tensor::empty({int64_t(leaf_losses.size()) * world->size()}, DType::f64);
    world->all_gather(local, gathered);
    all = gathered.to_f64_vector();
  }
  DEW_REQUIRE(int64_t(all.size()) == 2 * leaves, "[train] {} leaf losses for {} leaves; expected 2 each",
              all.size(), leaves);
  double loss = 0, router = 0;
  for (int64_t i = 0; i < leaves; ++i) loss += all[size_t(2 * i)], router += all[size_t(2 * i + 1)];
  out.loss = loss / double(leaves);
  out.router_loss = router / double(leaves);
}

}  // namespace dew::train
