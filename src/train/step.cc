// One optimizer step (train.h train_step): the Trainer's and `dew bench train`'s, so the benchmark
// times exactly what a run does.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "train/data_parallel.h"
#include "train/parameter_gathers.h"

namespace dew::train {

namespace {

// Ids the model has no row for are refused here, naming the batch and the vocabulary, rather than by
// the embedding op deep inside the forward.
void require_ids_in_vocabulary(const data::Batch& batch, int64_t vocab_size) {
  const Tensor ids = batch.tokens.contiguous();
  const int64_t* id = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i)
    DEW_REQUIRE(id[i] >= 0 && id[i] < vocab_size,
                "[train] batch {} of the data chain holds token id {}, outside the model's vocabulary of {} "
                "([model] vocab_size); the data was tokenized for another vocabulary",
                batch.index, id[i], vocab_size);
}

void zero_gradients(const std::vector<Param>& params) {
  for (const Param& p : params) Tensor(p.tensor).zero_grad();
}

// What one leaf (a row group of one microbatch) gives the step: its loss to differentiate, and the
// router losses within it, for the metrics.
struct LeafLoss {
  Tensor loss;
  double router_loss = 0;
};

// The step every objective shares: for each of this rank's row groups (data_parallel.h; one group and
// this process alone unless data-parallel), for each microbatch, `loss_of(model or its low-precision
// copy, rows, draw index, out)` (which counts what it trained on into `out`) / (accumulation x groups)
// and backward; the groups' gradients summed in the fixed tree, then over the ranks; the global norm,
// clipped; the optimizer unless the loss or the norm is not finite; gradients zeroed.
template <class Model, class LossOf>
StepResult run_step(const Model& model, const std::vector<Param>& params, Optimizer& optimizer,
                    const StepOptions& options, const std::function<std::optional<data::Batch>()>& next_batch,
                    LossOf loss_of) {
  DEW_REQUIRE(options.accumulation >= 1, "[train] accumulation {}; expected >= 1", options.accumulation);
  DEW_REQUIRE(options.compute == DType::f32 || options.compute == DType::bf16,
              "[train] compute dtype {}; expected f32, or bf16 for mixed precision",
              dtype_name(options.compute));
  parallel::Communicator* world = options.data_parallel ? options.data_parallel->world : nullptr;
  const int ranks = world ? world->size() : 1;
  const int64_t A = options.accumulation, G = options.row_groups;
  check_row_groups(G, ranks);
  const int64_t local_groups = G / ranks, first_group = (world ? world->rank() : 0) * local_groups;
  StepResult out;
  // Mixed precision: the weights' bf16 copy is cast once per step and read by every microbatch; each
  // backward but the last keeps the casts' graph, so each microbatch's gradient still reaches the f32
  // masters through the cast (summed there in f32). The microbatches' own graphs go with their losses.
  // ZeRO-3: each rank casts the parameters it owns; the others' casts come with their gathers.
  ParameterGathers* gathers = options.data_parallel ? options.data_parallel->gathers : nullptr;
  std::optional<Model> low;
  if (options.compute != DType::f32) {
    const ProfilePhase phase("forward");
    low = gathers ? model.to(options.compute, gathers->cast_for_pass()) : model.to(options.compute);
  }
  GatheredPass pass(gathers, (low ? *low : model).parameters());
  // The step's microbatches, read as the first row group reaches them and kept for the others.
  std::vector<data::Batch> batches;
  batches.reserve(size_t(A));
  const auto batch_at = [&](int64_t micro) -> const data::Batch* {
    if (size_t(micro) < batches.size()) return &batches[size_t(micro)];
    const auto wait = std::chrono::steady_clock::now();
    std::optional<data::Batch> batch = next_batch();
    out.data_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait).count();
    if (!batch) return nullptr;
    batches.push_back(std::move(*batch));
    return &batches.back();
  };
  std::vector<double> leaf_losses;  // (local groups, A, 2): loss and router loss
  std::optional<GradientTree> tree;
  if (local_groups > 1) tree.emplace(params);
  std::optional<GradientReducer> reducer;
  if (ranks > 1) reducer.emplace(params, *options.data_parallel, tree ? &*tree : nullptr, out);
  for (int64_t group = first_group; group < first_group + local_groups; ++group) {
    for (int64_t micro = 0; micro < A; ++micro) {
      const data::Batch* batch = batch_at(micro);
      if (!batch) {  // the data ended: no update, and no half-accumulated gradient left behind
        pass.end();
        zero_gradients(params);
        return out;
      }
      const data::Batch rows = G == 1 ? *batch : batch_rows(*batch, group, G);
      std::optional<ProfilePhase> phase(std::in_place, "forward");
      const LeafLoss leaf = loss_of(low ? *low : model, rows, micro * G + group, out);
      leaf_losses.push_back(leaf.loss.to_f64_vector()[0]);
      leaf_losses.push_back(leaf.router_loss);
      phase.emplace("backward");
      const bool last = group + 1 == first_group + local_groups && micro + 1 == A;
      if (last && reducer) reducer->arm();  // gradients reduced as this backward completes them
      backward(A * G == 1 ? leaf.loss
                          : mul(leaf.loss,
                                Tensor::full({}, 1.0 / double(A * G), leaf.loss.dtype(), leaf.loss.device())),
               {.retain_graph = low && !last});
    }
    if (tree && group + 1 < first_group + local_groups) tree->add_leaf();
  }
  if (reducer)
    reducer->finish();
  else if (tree)
    tree->finish();
  pass.end();  // the gathered parameters released before the optimizer's state is touched
  if (gathers) {
    out.communicated_bytes += gathers->take_sent_bytes();
    out.communication_wait_s += gathers->take_wait_seconds();
  }
  reduce_step_results(world, leaf_losses, A * G, out);
  out.complete = true;
  {
    const ProfilePhase phase("clipping");
    const double max_norm =
        options.grad_clip > 0 ? options.grad_clip : std::numeric_limits<double>::infinity();
    if (options.tensor_group) {  // whole parameters count on the group's rank 0 only
      std::vector<bool> counted = options.tensor_split;
      if (options.tensor_group->rank() == 0) counted.assign(params.size(), true);
      out.grad_norm = clip_grad_norm(params, max_norm, options.tensor_group, counted);
    } else {
      out.grad_norm = clip_grad_norm(
          params, max_norm,
          options.data_parallel && options.data_parallel->gradients_to_owners ? world : nullptr);
    }
  }
  out.applied = std::isfinite(out.loss) && std::isfinite(out.grad_norm);
  const ProfilePhase phase("optimizer");
  if (out.applied) {
    optimizer.step(options.lr);  // a sharded optimizer: the parameters this rank owns
    if (options.data_parallel && !options.data_parallel->owner.empty() && !gathers)
      share_updated_parameters(params, *options.data_parallel, out);  // ZeRO-3: the owners' alone
  }
  zero_gradients(params);  // every parameter's, the optimizer's or not
  return out;
}

}  // namespace

StepResult train_step(const CausalLM& model, const std::vector<Param>& params, Optimizer& optimizer,
                      const StepOptions& options,
                      const std::function<std::optional<data::Batch>()>& next_batch) {
  return run_step(model, params, optimizer, options, next_batch,
                  [&](const CausalLM& m, const data::Batch& batch, int64_t, StepResult& out) -> LeafLoss {
                    require_ids_in_vocabulary(batch, model.config().vocab_size);
                    out.tokens += batch.tokens.shape()[0] * (batch.tokens.shape()[1] - 1);
                    out.T = batch.tokens.shape()[1] - 1;
                    const LmLoss lm = lm_loss(m, batch, {.z_loss = options.z_loss, .router_losses = true});
                    out.targets += lm.targets;
                    out.correct += lm.correct;
                    if (out.expert_tokens.empty()) out.expert_tokens.assign(lm.expert_tokens.size(), {});
                    for (size_t l = 0; l < lm.expert_tokens.size(); ++l) {
                      std::vector<int64_t>& sum = out.expert_tokens[l];
                      sum.resize(lm.expert_tokens[l].size(), 0);
                      for (size_t e = 0; e < sum.size(); ++e) sum[e] += lm.expert_tokens[l][e];
                    }
                    return {lm.loss, lm.router_loss};
                  });
}

StepResult image_train_step(const ImageModel& model, const std::vector<Param>& params, Optimizer& optimizer,
                            const ImageStepOptions& options,
                            const std::function<std::optional<data::Batch>()>& next_batch) {
  return run_step(
      model, params, optimizer, options.step, next_batch,
      [&](const ImageModel& m, const data::Batch& batch, int64_t draw, StepResult& out) -> LeafLoss {
        DEW_REQUIRE(batch.images.defined(),
                    "[train] batch {} of the data chain holds tokens; an image model trains on images (an "
                    "idx_images source)",
                    batch.index);
        DEW_REQUIRE(batch.real_rows > 0, "[train] batch {} holds no images, only padding", batch.index);
        const Tensor x0 = batch.images.slice(0, 0, batch.real_rows)
                              .contiguous()
                              .to(model.parameters().begin()->second.device());
        out.images += batch.real_rows;
        const Tensor labels = dropped_labels(model, batch.labels.slice(0, 0, batch.real_rows).contiguous(),
                                             options.seed, options.step_index, draw);
        const DType dtype = m.parameters().begin()->second.dtype();
        const diffusion::TrainingNetwork network = [&](const Tensor& x, const Tensor& t, const Tensor& r) {
          return m.forward(cast(x, dtype), t, labels.defined() ? labels.to(x.device()) : labels, r);
        };
        // Each microbatch (each row group of one) of a step draws its own times and noise.
        const uint64_t draws_per_step = uint64_t(options.step.accumulation * options.step.row_groups);
        return {diffusion_loss(network, x0, options.objective, options.seed,
                               uint64_t(options.step_index) * draws_per_step + uint64_t(draw))
                    .loss};
      });
}

Tensor dropped_labels(const ImageModel& model, const Tensor& labels, uint64_t seed, int64_t step,
                      int64_t micro) {
  const ImageConditioning c = model.conditioning();
  if (c.num_classes == 0) return {};
  std::vector<double> v = labels.to_f64_vector();
  for (size_t i = 0; i < v.size(); ++i)
    DEW_REQUIRE(
        v[i] >= 0 && v[i] < double(c.num_classes),
        "[train] an image's class is {}; the model has classes 0 to {} (is the labels file the images'?)",
        int64_t(v[i]), c.num_classes - 1);
  if (c.class_dropout_prob > 0) {
    Tensor u = Tensor::empty({int64_t(v.size())}, DType::f64);
    fill_uniform(u, {seed, 0x64726f70ull ^ (uint64_t(step) << 8) ^ uint64_t(micro), 0}, 0, 1);  // "drop"
    const std::vector<double> draws = u.to_f64_vector();
    for (size_t i = 0; i < v.size(); ++i)
      if (draws[i] < c.class_dropout_prob) v[i] = double(c.num_classes);
  }
  return Tensor::from_values(v, {int64_t(v.size())}, DType::i64);
}

}  // namespace dew::train
