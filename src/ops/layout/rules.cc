// The layout ops move values, so their vjps move gradients back (concat <-> split, pad -> its
// interior, permute_copy -> the inverse permutation, tril/triu -> themselves) and their jvps apply the
// op to the tangents. fill and arange have no floating inputs: non-differentiable.
#include "ops/layout/layout.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

std::vector<int64_t> inverse_of(const std::vector<int64_t>& order, int64_t rank) {
  std::vector<int64_t> inverse(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    inverse[size_t(normalize_axis(order[size_t(i)], rank, "permute_copy"))] = i;
  return inverse;
}

}  // namespace

Differentiation Layout::differentiation(std::string_view op) {
  return op == "fill" || op == "arange" ? Differentiation::non_differentiable : Differentiation::rules;
}

std::vector<bool> Layout::vjp_reads_outputs(const Args&) {
  return {};
}

VjpRule Layout::vjp(const Args& a) {
  const LayoutFn f = a.fn;
  const int64_t axis = a.axis, rank = a.xs.empty() ? 0 : a.xs[0].dim();
  const Args attributes{{}, a.ints, a.axis, a.value, a.start, a.step, a.out_dtype, a.fn};
  std::vector<int64_t> sizes;  // concat: each input's extent along the axis
  std::vector<Shape> shapes;
  for (const Tensor& x : a.xs) shapes.push_back(x.shape());
  const DType dtype = a.xs.empty() ? a.out_dtype : a.xs[0].dtype();
  if (f == LayoutFn::concat)
    for (const Tensor& x : a.xs) sizes.push_back(x.size(axis));
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    switch (f) {
      case LayoutFn::concat:
        return split(d[0], sizes, axis);
      case LayoutFn::split: {
        std::vector<Tensor> pieces;
        Device device;  // where the gradients are: the first defined one's device
        for (const Tensor& di : d)
          if (di.defined()) {
            device = di.device();
            break;
          }
        for (size_t i = 0; i < d.size(); ++i) {
          if (d[i].defined()) {
            pieces.push_back(d[i]);
          } else {  // a piece no gradient reached: zeros of its shape
            Shape s = shapes[0];
            s[size_t(normalize_axis(axis, rank, "split"))] = attributes.ints[i];
            pieces.push_back(Tensor::zeros(s, dtype, device));
          }
        }
        return {concat(pieces, axis)};
      }
      case LayoutFn::pad:
        return {padded_interior(d[0], attributes)};
      case LayoutFn::permute_copy:
        return {permute_copy(d[0], inverse_of(attributes.ints, rank))};
      case LayoutFn::tril:
        return {tril(d[0], axis)};
      case LayoutFn::triu:
        return {triu(d[0], axis)};
      default:
        return {};
    }
  };
}

std::vector<Tensor> Layout::jvp(const Args& a, const std::vector<Tensor>& outs,
                                const std::vector<Tensor>& t) {
  switch (a.fn) {
    case LayoutFn::concat: {
      std::vector<Tensor> parts;
      for (size_t i = 0; i < a.xs.size(); ++i)
        parts.push_back(t[i].defined() ? t[i]
                                       : Tensor::zeros(a.xs[i].shape(), a.xs[i].dtype(), a.xs[i].device()));
      return {concat(parts, a.axis)};
    }
    case LayoutFn::split:
      return split(t[0], a.ints, a.axis);
    case LayoutFn::pad:
      return {pad(t[0], a.ints, 0.0)};
    case LayoutFn::permute_copy:
      return {permute_copy(t[0], a.ints)};
    case LayoutFn::tril:
      return {tril(t[0], a.axis)};
    case LayoutFn::triu:
      return {triu(t[0], a.axis)};
    default:
      return std::vector<Tensor>(outs.size());
  }
}

}  // namespace dew::ops
