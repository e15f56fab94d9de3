// rms_norm: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/rms_norm/rms_norm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> RmsNorm::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): sum of C squares (relative gamma_C), a sqrt, a division and
  // two products: relative to |y| and to rstd.
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  std::vector<double> x = a.x.to_f64_vector(),
                      w = a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>();
  std::vector<double> y(x.size()), my(x.size()), rstd(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {  // rows
    double ss = 0;
    for (int64_t i = 0; i < C; ++i) ss += x[size_t(r * C + i)] * x[size_t(r * C + i)];
    rstd[size_t(r)] = 1.0 / std::sqrt(ss / double(C) + a.eps);
    for (int64_t i = 0; i < C; ++i) {  // channels
      size_t k = size_t(r * C + i);
      y[k] = x[k] * rstd[size_t(r)] * (w.empty() ? 1.0 : w[size_t(i)]);
      my[k] = std::fabs(y[k]);
    }
  }
  const Shape rs(a.x.shape().begin(), a.x.shape().end() - 1);  // a statistic per row
  return {{Tensor::from_values(y, a.x.shape(), DType::f64), Tensor::from_values(my, a.x.shape(), DType::f64),
           C + 6},
          {Tensor::from_values(rstd, rs, DType::f64), Tensor::from_values(rstd, rs, DType::f64), C + 4}};
}

std::vector<Truth> RmsNormBackward::reference(const Args& a) {
  // dx = rstd (g - x rstd^2 mean(g x)), g = dy w; dw = sum_rows dy x rstd. Magnitudes: the absolute
  // terms of each sum (NOTE [certified bound]).
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  auto x = a.x.to_f64_vector(), dy = a.dy.to_f64_vector(), rstd = a.rstd.to_f64_vector();
  auto w = a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>(size_t(C), 1.0);
  std::vector<double> dx(x.size()), mdx(x.size()), dw(size_t(C), 0.0), mdw(size_t(C), 0.0);
  for (int64_t r = 0; r < rows; ++r) {  // rows
    double r_ = rstd[size_t(r)], s = 0, s_abs = 0;
    for (int64_t i = 0; i < C; ++i) {
      size_t k = size_t(r * C + i);
      s += dy[k] * w[size_t(i)] * x[k];
      s_abs += std::fabs(dy[k] * w[size_t(i)] * x[k]);
    }
    for (int64_t i = 0; i < C; ++i) {  // channels
      size_t k = size_t(r * C + i);
      double g = dy[k] * w[size_t(i)];
      dx[k] = r_ * (g - x[k] * r_ * r_ * s / double(C));
      mdx[k] = r_ * (std::fabs(g) + std::fabs(x[k]) * r_ * r_ * s_abs / double(C));
      dw[size_t(i)] += dy[k] * x[k] * r_;
      mdw[size_t(i)] += std::fabs(dy[k] * x[k] * r_);
    }
  }
  std::vector<Truth> out{{Tensor::from_values(dx, a.x.shape(), DType::f64),
                          Tensor::from_values(mdx, a.x.shape(), DType::f64), C + 8}};
  if (a.weight.defined())
    out.push_back(
        {Tensor::from_values(dw, {C}, DType::f64), Tensor::from_values(mdw, {C}, DType::f64), rows + 4});
  return out;
}

}  // namespace dew::ops
