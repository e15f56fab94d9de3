// Helpers shared by the differentiation rules.
#include "ops/rules_common.h"

#include <algorithm>
#include <numeric>

namespace dew::ops {

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.dim() - int64_t(shape.size());
  DEW_REQUIRE(lead >= 0, "[gradient] {} cannot be summed to the shape {}", g.describe(), shape_str(shape));
  std::vector<int64_t> axes(static_cast<size_t>(lead));
  std::iota(axes.begin(), axes.end(), 0);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 1 && g.size(lead + int64_t(i)) != 1) axes.push_back(lead + int64_t(i));
  if (axes.empty()) return g.contiguous().reshape(shape);
  return sum(g, axes, /*keepdim=*/true).reshape(shape);
}

Tensor scalar_like(double value, const Tensor& like) {
  return Tensor::full({}, value, like.dtype(), like.device());
}

Tensor add_defined(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return add(a, b);
}

Tensor unreduce(const Tensor& g, const Shape& shape, const std::vector<int64_t>& axes, bool keepdim) {
  Tensor k = g;
  if (!keepdim) {
    std::vector<int64_t> sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t a : sorted) k = k.unsqueeze(a);
  }
  return k.expand(shape);
}

std::vector<int64_t> row_axes(const Tensor& x) {
  std::vector<int64_t> axes;
  for (int64_t a = 0; a + 1 < x.dim(); ++a) axes.push_back(a);
  return axes;
}

Tensor cube(const Tensor& t) {
  return mul(square(t), t);
}

}  // namespace dew::ops
