// The two tape entries parameter sharding (ZeRO-3, src/train/parameter_gathers.h) needs: an identity
// whose backward runs a hook first, and a cast whose values arrive later. Neither knows of ranks.
#include <dew/autodiff.h>
#include <dew/ops.h>

#include "core/autograd.h"

namespace dew {

Tensor backward_hook(const Tensor& x, std::function<void()> on_backward) {
  if (!grad_enabled() || !detail::needs_grad(x)) return x;
  Tensor y = x.detach();  // the same bytes, a node of its own
  auto node = std::make_shared<detail::GradNode>();
  node->op = "backward_hook";
  node->inputs.push_back(detail::edge_of(x));
  node->vjp = [on_backward = std::move(on_backward)](const std::vector<Tensor>& d,
                                                     const std::vector<Tensor>&) -> std::vector<Tensor> {
    on_backward();
    return {d[0]};
  };
  if (const detail::AutogradMeta* meta = detail::autograd_meta_if_any(x); meta && !meta->tangents.empty())
    detail::autograd_meta(y).tangents = meta->tangents;  // an identity's tangent is its input's
  detail::attach(y, node, 0);
  return y;
}

Tensor deferred_cast(const Tensor& t, DType dtype) {
  DEW_REQUIRE(is_floating(t.dtype()) && is_floating(dtype),
              "[deferred_cast] {} to {}; expected floating dtypes", t.describe(), dtype_name(dtype));
  Tensor y = Tensor::empty(t.shape(), dtype, t.device());
  y.release_storage();
  if (!grad_enabled() || !detail::needs_grad(t)) return y;
  auto node = std::make_shared<detail::GradNode>();
  node->op = "deferred_cast";
  node->inputs.push_back(detail::edge_of(t));
  const DType from = t.dtype();
  node->vjp = [from](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    return {cast(d[0], from)};  // cast's own rule (src/ops/cast/rules.cc)
  };
  detail::attach(y, node, 0);
  return y;
}

}  // namespace dew
