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

// The step every objective shares: for each microbatch, `loss_of(model or its low-precision copy,
// batch, micro, out)` (which counts what it trained on into `out`) / accumulation and backward; the
// global norm, clipped; the optimizer unless the loss or the norm is not finite; gradients zeroed.
template <class Model, class LossOf>
StepResult run_step(const Model& model, const std::vector<Param>& params, Optimizer& optimizer,
                    const StepOptions& options, const std::function<std::optional<data::Batch>()>& next_batch,
                    LossOf loss_of) {
  DEW_REQUIRE(options.accumulation >= 1, "[train] accumulation {}; expected >= 1", options.accumulation);
  DEW_REQUIRE(options.compute == DType::f32 || options.compute == DType::bf16,
              "[train] compute dtype {}; expected f32, or bf16 for mixed precision",
              dtype_name(options.compute));
  StepResult out;
  double loss_sum = 0;
  // Mixed precision: the weights' bf16 copy is cast once per step and read by every microbatch; each
  // backward but the last keeps the casts' graph, so each microbatch's gradient still reaches the f32
  // masters through the cast (summed there in f32). The microbatches' own graphs go with their losses.
  std::optional<Model> low;
  if (options.compute != DType::f32) {
    const ProfilePhase phase("forward");
    low = model.to(options.compute);
  }
  for (int64_t micro = 0; micro < options.accumulation; ++micro) {
    const auto wait = std::chrono::steady_clock::now();
    std::optional<data::Batch> batch = next_batch();
    out.data_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait).count();
    if (!batch) {  // the data ended: no update, and no half-accumulated gradient left behind
      optimizer.zero_grad();
      return out;
    }
    std::optional<ProfilePhase> phase(std::in_place, "forward");
    const Tensor loss = loss_of(low ? *low : model, *batch, micro, out);
    loss_sum += loss.to_f64_vector()[0];
    phase.emplace("backward");
    backward(options.accumulation == 1 ? loss
                                       : mul(loss, Tensor::full({}, 1.0 / double(options.accumulation),
                                                                loss.dtype(), loss.device())),
             {.retain_graph = low && micro + 1 < options.accumulation});
  }
  out.complete = true;
  out.loss = loss_sum / double(options.accumulation);
  {
    const ProfilePhase phase("clipping");
    out.grad_norm = clip_grad_norm(
        params, options.grad_clip > 0 ? options.grad_clip : std::numeric_limits<double>::infinity());
  }
  out.applied = std::isfinite(out.loss) && std::isfinite(out.grad_norm);
  const ProfilePhase phase("optimizer");
  if (out.applied) optimizer.step(options.lr);
  optimizer.zero_grad();
  return out;
}

}  // namespace

StepResult train_step(const CausalLM& model, const std::vector<Param>& params, Optimizer& optimizer,
                      const StepOptions& options,
                      const std::function<std::optional<data::Batch>()>& next_batch) {
  return run_step(model, params, optimizer, options, next_batch,
                  [&](const CausalLM& m, const data::Batch& batch, int64_t, StepResult& out) {
                    require_ids_in_vocabulary(batch, model.config().vocab_size);
                    out.tokens += batch.tokens.shape()[0] * (batch.tokens.shape()[1] - 1);
                    out.T = batch.tokens.shape()[1] - 1;
                    const LmLoss lm = lm_loss(m, batch, {.z_loss = options.z_loss, .router_losses = true});
                    out.targets += lm.targets;
                    out.correct += lm.correct;
                    out.router_loss += lm.router_loss / double(options.accumulation);
                    if (out.expert_tokens.empty()) out.expert_tokens.assign(lm.expert_tokens.size(), {});
                    for (size_t l = 0; l < lm.expert_tokens.size(); ++l) {
                      std::vector<int64_t>& sum = out.expert_tokens[l];
                      sum.resize(lm.expert_tokens[l].size(), 0);
                      for (size_t e = 0; e < sum.size(); ++e) sum[e] += lm.expert_tokens[l][e];
                    }
                    return lm.loss;
                  });
}

StepResult image_train_step(const ImageModel& model, const std::vector<Param>& params, Optimizer& optimizer,
                            const ImageStepOptions& options,
                            const std::function<std::optional<data::Batch>()>& next_batch) {
  return run_step(
      model, params, optimizer, options.step, next_batch,
      [&](const ImageModel& m, const data::Batch& batch, int64_t micro, StepResult& out) {
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
                                             options.seed, options.step_index, micro);
        const DType dtype = m.parameters().begin()->second.dtype();
        const diffusion::TrainingNetwork network = [&](const Tensor& x, const Tensor& t, const Tensor& r) {
          return m.forward(cast(x, dtype), t, labels.defined() ? labels.to(x.device()) : labels, r);
        };
        // Each microbatch of a step draws its own times and noise.
        return diffusion_loss(
                   network, x0, options.objective, options.seed,
                   uint64_t(options.step_index) * uint64_t(options.step.accumulation) + uint64_t(micro))
            .loss;
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
