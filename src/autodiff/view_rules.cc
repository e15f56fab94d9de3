// The views' vjps: each view's gradient placed back into its base's shape.
#include "autodiff/view_rules.h"

#include <dew/ops.h>

#include "ops/rules_common.h"

namespace dew::autodiff {
namespace {

using Kind = detail::ViewSpec::Kind;

// d_view (a slice of dim d: start, start + step, ...) placed into zeros of base_shape.
Tensor unslice(const Tensor& d_view, const Shape& base_shape, int64_t d, int64_t start, int64_t step) {
  const int64_t n = d_view.size(d);
  if (step == 1) {
    std::vector<int64_t> pads(size_t(2 * (int64_t(base_shape.size()) - d)), 0);
    const size_t pair = size_t(2 * (int64_t(base_shape.size()) - 1 - d));  // pads run from the last dim
    pads[pair] = start;
    pads[pair + 1] = base_shape[size_t(d)] - start - n;
    return pad(d_view, pads, 0.0);
  }
  std::vector<double> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[size_t(i)] = double(start + i * step);
  Shape index_shape(d_view.shape().size(), 1);
  index_shape[size_t(d)] = n;
  const Tensor index = Tensor::from_values(rows, index_shape, DType::i64)
                           .to(d_view.device())
                           .expand(d_view.shape())
                           .contiguous();
  return scatter_add(Tensor::zeros(base_shape, d_view.dtype(), d_view.device()), d, index, d_view);
}

}  // namespace

std::vector<Tensor> view_vjp(const detail::ViewSpec& v, const Tensor& d_view) {
  const int64_t rank = int64_t(v.base_shape.size());
  switch (v.kind) {
    case Kind::slice:
      return {unslice(d_view, v.base_shape, v.params[0], v.params[1], v.params[3])};
    case Kind::select:
      return {unslice(d_view.unsqueeze(v.params[0]), v.base_shape, v.params[0], v.params[1], 1)};
    case Kind::permute: {
      std::vector<int64_t> inverse(size_t(rank), 0);
      for (int64_t i = 0; i < rank; ++i)
        inverse[size_t(normalize_axis(v.params[size_t(i)], rank, "permute"))] = i;
      return {d_view.permute(inverse)};
    }
    case Kind::reshape:
      return {d_view.contiguous().reshape(v.base_shape)};
    case Kind::expand:
      return {ops::sum_to_shape(d_view, v.base_shape)};
    case Kind::unsqueeze:
      return {d_view.squeeze(v.params[0])};
    case Kind::copy:
      return {d_view};
    case Kind::to_device:
      return {d_view.to(Device{Device::Kind(v.params[0]), int(v.params[1])})};
  }
  return {};
}

}  // namespace dew::autodiff
