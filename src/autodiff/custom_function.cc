// custom_function (autodiff.h): a function of one tensor with its own vjp and jvp, on the tape as one
// node.
#include <dew/autodiff.h>

#include "core/autograd.h"

namespace dew {

Tensor custom_function(const Tensor& x, const CustomFunction& f) {
  DEW_REQUIRE(f.forward && f.vjp, "[custom_function] {} needs a forward and a vjp", f.name);
  const Tensor tangent = detail::tangent_of(x);
  DEW_REQUIRE(!tangent.defined() || (f.jvp && detail::visible_jvp_levels() == 1),
              "[custom_function] {} in forward mode needs a jvp rule and one jvp level", f.name);
  Tensor y;
  {
    detail::Untracked untracked;  // its ops stay off the tape; the node below stands for them
    y = f.forward(x.detach());
  }
  if (grad_enabled() && detail::needs_grad(x)) {
    auto node = std::make_shared<detail::GradNode>();
    node->op = f.name;
    node->inputs.push_back(detail::edge_of(x));
    node->vjp = [vjp = f.vjp](const std::vector<Tensor>& d,
                              const std::vector<Tensor>&) -> std::vector<Tensor> { return {vjp(d[0])}; };
    detail::attach(y, node, 0);
  }
  if (tangent.defined()) {
    Tensor t;
    {
      detail::OuterJvpLevels outer;  // the rule's ops carry no tangent of their own
      t = f.jvp(tangent);
    }
    detail::set_tangent(y, t);
  }
  return y;
}

}  // namespace dew
