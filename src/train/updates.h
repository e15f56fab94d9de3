// What the update rules share (updates.cc, muon.cc): the walk over parameters with gradients, and
// AdamW's elementwise update, which Muon also applies to the parameters it does not orthogonalize.
#pragma once

#include <dew/error.h>
#include <dew/train.h>

#include <vector>

namespace dew::train::detail {

inline constexpr int64_t kGrain = 1 << 14;  // elements per parallel_for chunk

// body(i, param, grad, n) for each parameter with a gradient; the parameter's version is bumped after.
template <class Body>
void for_each_gradient(std::vector<Param>& params, Body&& body) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor grad = params[i].tensor.grad();
    if (!grad.defined()) continue;
    DEW_REQUIRE(grad.dtype() == DType::f32 && grad.shape() == params[i].tensor.shape(),
                "[optimizer] the gradient of {} is {}; expected f32 of its shape", params[i].name,
                grad.describe());
    const Tensor g = grad.contiguous();
    body(i, params[i].tensor.data<float>(), g.data<float>(), params[i].tensor.numel());
    params[i].tensor.bump_version();  // written in place: a rule that saved it would now refuse
  }
}

// One AdamW update of n elements at optimizer step `step` (1-based), in torch.optim.AdamW's order.
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWOptions& o,
                  int64_t step, double lr, double weight_decay);
void check_adamw(const AdamWOptions& o);

}  // namespace dew::train::detail
