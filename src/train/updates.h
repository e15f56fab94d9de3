// What the update rules share (updates.cc, muon.cc): the walk over parameters with gradients, and the
// AdamW step that Muon also takes for the parameters it does not orthogonalize. The arithmetic is in
// the optimizer ops (src/ops/optimizer), on whatever device the parameter is.
#pragma once

#include <dew/error.h>
#include <dew/ops.h>
#include <dew/train.h>

#include <vector>

namespace dew::train::detail {

// For each parameter with a gradient: body(i, gradient). The ops check the gradient against the
// parameter, write the parameter in place and bump its version (a rule that saved it would now refuse).
template <class Body>
void for_each_gradient(std::vector<Param>& params, Body&& body) {
  for (size_t i = 0; i < params.size(); ++i)
    if (const Tensor grad = params[i].tensor.grad(); grad.defined()) body(i, grad);
}

// AdamW's step `step` (1-based) of a parameter group.
inline AdamWStep adamw_step(const AdamWOptions& o, int64_t step, double lr, double weight_decay) {
  return {
      .lr = lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = weight_decay, .step = step};
}
void check_adamw(const AdamWOptions& o);

}  // namespace dew::train::detail
