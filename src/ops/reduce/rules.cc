// The reductions' vjp and jvp. max and min split the gradient evenly among the elements that tie
// for the extreme (PyTorch's rule for amax); argmax is non-differentiable.
#include "ops/reduce/reduce.h"
#include "ops/rows.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

std::vector<int64_t> reduced_axes(const ReduceArgs& a) {
  return normalize_axes(a.axes, a.x.dim(), reduce_name(a.fn).data());
}

// d y / d x of max, min and logsumexp, x's shape: the tie-split mask, or softmax.
Tensor extreme_weights(ReduceFn f, bool keepdim, const Tensor& x, const Tensor& y,
                       const std::vector<int64_t>& axes) {
  const Tensor y_full = unreduce(y, x.shape(), axes, keepdim);
  if (f == ReduceFn::logsumexp) return exp(sub(x, y_full));
  const Tensor hit = cast(eq(x, y_full), x.dtype());
  return div(hit, unreduce(sum(hit, axes, keepdim), x.shape(), axes, keepdim));
}

}  // namespace

Differentiation Reduce::differentiation(std::string_view op) {
  return reduce_from_name(op) == ReduceFn::argmax ? Differentiation::non_differentiable
                                                  : Differentiation::rules;
}

std::vector<bool> Reduce::vjp_reads_outputs(const Args& a) {
  return {a.fn != ReduceFn::sum && a.fn != ReduceFn::mean};
}

VjpRule Reduce::vjp(const Args& a) {
  const ReduceFn f = a.fn;
  const bool keepdim = a.keepdim;
  const SavedTensor x(f == ReduceFn::sum || f == ReduceFn::mean ? Tensor() : a.x, reduce_name(f));
  const Shape shape = a.x.shape();
  const std::vector<int64_t> axes = reduced_axes(a);
  double count = 1;
  for (int64_t ax : axes) count *= double(shape[size_t(ax)]);
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& y) -> std::vector<Tensor> {
    const Tensor g = unreduce(d[0], shape, axes, keepdim);
    if (f == ReduceFn::sum) return {g};
    if (f == ReduceFn::mean) return {mul(g, scalar_like(1.0 / count, g))};
    return {mul(g, extreme_weights(f, keepdim, x.get(), y[0], axes))};
  };
}

std::vector<Tensor> Reduce::jvp(const Args& a, const std::vector<Tensor>& outs,
                                const std::vector<Tensor>& t) {
  const std::vector<int64_t> axes = reduced_axes(a);
  if (a.fn == ReduceFn::sum) return {sum(t[0], axes, a.keepdim)};
  if (a.fn == ReduceFn::mean) return {mean(t[0], axes, a.keepdim)};
  return {sum(mul(t[0], extreme_weights(a.fn, a.keepdim, a.x, outs[0], axes)), axes, a.keepdim)};
}

}  // namespace dew::ops
