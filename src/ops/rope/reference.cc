// rope: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/rope/rope.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Rope::reference(const Args& a) {
  // Magnitude (NOTE [certified bound]): two products and a sum, |x_a c| + |x_b s|.
  const int64_t BT = a.x.size(0) * a.x.size(1), H = a.x.size(2), D = a.x.size(3), half = a.cos.size(1);
  auto x = a.x.to_f64_vector(), pos = a.positions.to_f64_vector(), c = a.cos.to_f64_vector(),
       s = a.sin.to_f64_vector();
  std::vector<double> y = x, m(x.size());
  for (size_t i = 0; i < x.size(); ++i) m[i] = std::fabs(x[i]);
  const bool inter = a.layout == RopeLayout::interleaved;
  for (int64_t r = 0; r < BT; ++r)  // (B, T) tokens
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < half; ++i) {  // rotated pairs
        size_t base = size_t((r * H + h) * D), ia = base + size_t(inter ? 2 * i : i),
               ib = base + size_t(inter ? 2 * i + 1 : i + half);
        size_t t = size_t(int64_t(pos[size_t(r)]) * half + i);
        y[ia] = x[ia] * c[t] - x[ib] * s[t];
        y[ib] = x[ib] * c[t] + x[ia] * s[t];
        m[ia] = std::fabs(x[ia] * c[t]) + std::fabs(x[ib] * s[t]);
        m[ib] = std::fabs(x[ib] * c[t]) + std::fabs(x[ia] * s[t]);
      }
  return {
      {Tensor::from_values(y, a.x.shape(), DType::f64), Tensor::from_values(m, a.x.shape(), DType::f64), 3}};
}

}  // namespace dew::ops
