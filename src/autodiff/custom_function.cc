// Functions of one tensor with derivative rules of their own (autodiff.h): custom_function, and the
// two parameter sharding (ZeRO-3, src/train/parameter_gathers.h) puts on the tape — an identity whose
// backward runs a hook first, and a cast whose values arrive later. None knows of ranks.
#include <dew/autodiff.h>
#include <dew/ops.h>

#include "core/autograd.h"

namespace dew {
namespace {

// y (fresh) becomes the output of one node whose one input is x and whose rule maps y's gradient to x's.
void record_unary(Tensor& y, const Tensor& x, std::string_view name,
                  std::function<Tensor(const Tensor&)> vjp) {
  auto node = std::make_shared<detail::GradNode>();
  node->op = name;
  node->inputs.push_back(detail::edge_of(x));
  node->vjp = [vjp = std::move(vjp)](const std::vector<Tensor>& d,
                                     const std::vector<Tensor>&) -> std::vector<Tensor> {
    return {vjp(d[0])};
  };
  detail::attach(y, node, 0);
}

}  // namespace

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
  if (grad_enabled() && detail::needs_grad(x)) record_unary(y, x, f.name, f.vjp);
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

// Not a custom_function: an identity passes the tangents of every jvp level, not the innermost alone.
Tensor backward_hook(const Tensor& x, std::function<void()> on_backward) {
  if (!grad_enabled() || !detail::needs_grad(x)) return x;
  Tensor y = x.detach();  // the same bytes, a node of its own
  if (const detail::AutogradMeta* meta = detail::autograd_meta_if_any(x); meta && !meta->tangents.empty())
    detail::autograd_meta(y).tangents = meta->tangents;
  record_unary(y, x, "backward_hook", [on_backward = std::move(on_backward)](const Tensor& d) {
    on_backward();
    return d;
  });
  return y;
}

Tensor deferred_cast(const Tensor& t, DType dtype) {
  DEW_REQUIRE(is_floating(t.dtype()) && is_floating(dtype),
              "[deferred_cast] {} to {}; expected floating dtypes", t.describe(), dtype_name(dtype));
  Tensor y = Tensor::empty(t.shape(), dtype, t.device());
  y.release_storage();
  if (grad_enabled() && detail::needs_grad(t))
    record_unary(y, t, "deferred_cast", [from = t.dtype()](const Tensor& d) {
      return cast(d, from);  // cast's own rule (src/ops/cast/rules.cc)
    });
  return y;
}

}  // namespace dew
