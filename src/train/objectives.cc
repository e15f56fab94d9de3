// Next-token language modelling over real tokens only: a packed batch's target for token t is token
// t+1 when both lie in the same document; targets in another document or in padding are ignored, so
// packing never teaches the model to predict across a document boundary.
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/train.h>

#include <cmath>
#include <utility>

namespace dew::train {

Tensor next_token_targets(const data::Batch& batch) {
  const int64_t rows = batch.tokens.shape()[0], width = batch.tokens.shape()[1], T = width - 1;
  DEW_REQUIRE(width >= 2, "[lm_loss] the batch's rows hold {} tokens; expected T+1 >= 2", width);
  Tensor targets = Tensor::empty({rows, T}, DType::i64);
  const int64_t* tokens = batch.tokens.data<int64_t>();
  const int64_t* segments = batch.segment_ids.data<int64_t>();
  const int64_t* mask = batch.loss_mask.defined() ? batch.loss_mask.data<int64_t>() : nullptr;
  int64_t* out = targets.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t here = segments[r * width + t], next = segments[r * width + t + 1];
      const bool counts = !mask || mask[r * width + t + 1] != 0;
      out[r * T + t] = here != 0 && here == next && counts ? tokens[r * width + t + 1] : kIgnoreTarget;
    }
  return targets;
}

LmLoss lm_loss(const CausalLM& model, const data::Batch& batch, const LmLossOptions& options) {
  // The batch comes from the data chain on the host; the model runs where its parameters are.
  const Device device = model.device();
  const int64_t T = batch.tokens.shape()[1] - 1;
  const Tensor ids = batch.tokens.slice(1, 0, T).to(device).contiguous();
  const Tensor positions = batch.positions.slice(1, 0, T).to(device).contiguous();
  const Tensor segments = batch.segment_ids.slice(1, 0, T).to(device).contiguous();
  const Tensor targets = next_token_targets(batch);
  const MoeConfig& moe = model.config().moe;
  RouterStats router;
  const Tensor logits =
      model.forward(ids, positions, nullptr, segments, moe.num_experts > 0 ? &router : nullptr);
  LmLoss out;
  out.target_ids = targets;
  out.loss =
      cross_entropy(logits, targets.to(device), {.ignore_index = kIgnoreTarget, .z_loss = options.z_loss})
          .loss;
  if (options.router_losses && moe.router_losses && !router.expert_tokens.empty()) {
    const auto weighted = [&](const Tensor& loss, double coef) {
      return mul(as_dtype(loss, out.loss.dtype()), Tensor::full({}, coef, out.loss.dtype(), device));
    };
    Tensor extra = weighted(load_balancing_loss(router), moe.aux_loss_coef);
    if (moe.z_loss_coef > 0) extra = add(extra, weighted(router_z_loss(router), moe.z_loss_coef));
    out.router_loss = extra.to_f64_vector()[0];
    out.loss = add(out.loss, extra);
  }
  out.expert_tokens = std::move(router.expert_tokens);
  // Accuracy: the argmax of each real target's row is the target (counted on the host).
  const Tensor predicted = argmax(logits.detach(), -1).to(Device::cpu());
  const int64_t* p = predicted.data<int64_t>();
  const int64_t* y = targets.data<int64_t>();
  for (int64_t i = 0; i < targets.numel(); ++i) {
    if (y[i] == kIgnoreTarget) continue;
    ++out.targets;
    out.correct += p[i] == y[i];
  }
  return out;
}

}  // namespace dew::train
