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

}  // namespace

StepResult train_step(const CausalLM& model, const std::vector<Param>& params, Optimizer& optimizer,
                      const StepOptions& options,
                      const std::function<std::optional<data::Batch>()>& next_batch) {
  DEW_REQUIRE(options.accumulation >= 1, "[train] accumulation {}; expected >= 1", options.accumulation);
  DEW_REQUIRE(options.compute == DType::f32 || options.compute == DType::bf16,
              "[train] compute dtype {}; expected f32, or bf16 for mixed precision",
              dtype_name(options.compute));
  StepResult out;
  double loss_sum = 0;
  // Mixed precision: the weights' bf16 copy is cast once per step and read by every microbatch; each
  // backward but the last keeps the casts' graph, so each microbatch's gradient still reaches the f32
  // masters through the cast (summed there in f32). The microbatches' own graphs go with their losses.
  std::optional<CausalLM> low;
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
    require_ids_in_vocabulary(*batch, model.config().vocab_size);
    out.tokens += batch->tokens.shape()[0] * (batch->tokens.shape()[1] - 1);
    out.T = batch->tokens.shape()[1] - 1;
    std::optional<ProfilePhase> phase(std::in_place, "forward");
    const LmLoss lm = lm_loss(low ? *low : model, *batch, {.z_loss = options.z_loss, .router_losses = true});
    loss_sum += lm.loss.to_f64_vector()[0];
    out.targets += lm.targets;
    out.correct += lm.correct;
    out.router_loss += lm.router_loss / double(options.accumulation);
    if (out.expert_tokens.empty()) out.expert_tokens.assign(lm.expert_tokens.size(), {});
    for (size_t l = 0; l < lm.expert_tokens.size(); ++l) {
      std::vector<int64_t>& sum = out.expert_tokens[l];
      sum.resize(lm.expert_tokens[l].size(), 0);
      for (size_t e = 0; e < sum.size(); ++e) sum[e] += lm.expert_tokens[l][e];
    }
    phase.emplace("backward");
    backward(options.accumulation == 1 ? lm.loss
                                       : mul(lm.loss, Tensor::full({}, 1.0 / double(options.accumulation),
                                                                   DType::f32, lm.loss.device())),
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

}  // namespace dew::train
