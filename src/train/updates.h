// What the update rules share (updates.cc, muon.cc): the walk over parameters with gradients, and
// AdamW's elementwise update, which Muon also applies to the parameters it does not orthogonalize.
#pragma once

#include <dew/error.h>
#include <dew/train.h>

#include <functional>
#include <vector>

namespace dew::train::detail {

inline constexpr int64_t kGrain = 1 << 14;  // elements per parallel_for chunk

// For each parameter with a gradient: body(i, param, grad, n) over host memory for a cpu parameter;
// on_device(i, grad) for a parameter on another device, or, without it, a refusal naming the
// parameter (the rule's loop runs on the host). The parameter's version is bumped after.
template <class Body>
void for_each_gradient(std::vector<Param>& params, Body&& body,
                       const std::function<void(size_t, const Tensor&)>& on_device = {}) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor grad = params[i].tensor.grad();
    if (!grad.defined()) continue;
    DEW_REQUIRE(grad.dtype() == DType::f32 && grad.shape() == params[i].tensor.shape(),
                "[optimizer] the gradient of {} is {}; expected f32 of its shape", params[i].name,
                grad.describe());
    if (params[i].tensor.device().kind != Device::Kind::cpu) {
      DEW_REQUIRE(on_device,
                  "[optimizer] parameter {} is on {}; this update rule runs on the cpu only (adamw "
                  "runs on cuda too)",
                  params[i].name, params[i].tensor.device().str());
      on_device(i, grad);
      params[i].tensor.bump_version();
      continue;
    }
    const Tensor g = grad.contiguous();
    body(i, params[i].tensor.data<float>(), g.data<float>(), params[i].tensor.numel());
    params[i].tensor.bump_version();  // written in place: a rule that saved it would now refuse
  }
}

// One AdamW update of n elements at optimizer step `step` (1-based), in torch.optim.AdamW's order.
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWOptions& o,
                  int64_t step, double lr, double weight_decay);
// The same update written with Dew's ops, for parameters on any device: each op rounds its result to
// f32 once, as each step of the host loop does (no contraction: DEW_KERNEL_FLAGS), so both give the
// same bits. p, m and v are written in place.
void adamw_update_by_ops(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWOptions& o,
                         int64_t step, double lr, double weight_decay);
void check_adamw(const AdamWOptions& o);

}  // namespace dew::train::detail
