// cross_entropy: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/cross_entropy/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> CrossEntropy::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): lse's error is absolute, from exp's argument (spread =
  // max - x) and the sum; the gradient's p_ij is relative to itself, widened by its exp argument.
  const int64_t V = a.logits.size(-1), N = a.logits.numel() / V;
  std::vector<double> x = a.logits.to_f64_vector(), t = a.targets.to_f64_vector();
  std::vector<double> w =
      a.weights.defined() ? a.weights.to_f64_vector() : std::vector<double>(size_t(N), 1.0);
  std::vector<double> lse(static_cast<size_t>(N)), mlse(static_cast<size_t>(N)), dx(x.size()), mdx(x.size());
  double W = 0;
  for (int64_t i = 0; i < N; ++i)
    if (int64_t(t[size_t(i)]) != a.ignore_index) W += w[size_t(i)];
  double loss = 0, mloss = 0;
  for (int64_t r = 0; r < N; ++r) {  // rows
    const double* xr = x.data() + r * V;
    double mx = -INFINITY, s = 0, spread = 0;
    for (int64_t i = 0; i < V; ++i) mx = std::max(mx, xr[i]);
    for (int64_t i = 0; i < V; ++i) s += std::exp(xr[i] - mx), spread = std::max(spread, mx - xr[i]);
    double l = mx + std::log(s);
    lse[size_t(r)] = l;
    mlse[size_t(r)] = std::fabs(l) + std::fabs(mx) + 1 + spread;
    bool counted = int64_t(t[size_t(r)]) != a.ignore_index;
    double scale = counted && W > 0 ? w[size_t(r)] / W : 0;
    if (counted) {
      loss += scale * (l - xr[int64_t(t[size_t(r)])] + a.z_loss * l * l);
      mloss += std::fabs(scale) *
               (mlse[size_t(r)] * (1 + 2 * a.z_loss * std::fabs(l)) + std::fabs(xr[int64_t(t[size_t(r)])]));
    }
    double p_scale = scale * (1 + 2 * a.z_loss * l);
    for (int64_t i = 0; i < V; ++i) {  // vocabulary
      double p = std::exp(xr[i] - l);
      bool target = counted && i == int64_t(t[size_t(r)]);
      dx[size_t(r * V + i)] = p_scale * p - (target ? scale : 0.0);
      mdx[size_t(r * V + i)] = std::fabs(p_scale) * p * (1 + std::fabs(xr[i]) + mlse[size_t(r)]) +
                               (target ? std::fabs(scale) : 0.0);
    }
  }
  Shape rows(a.logits.shape().begin(), a.logits.shape().end() - 1);
  return {
      {Tensor::from_values({loss}, {}, DType::f64), Tensor::from_values({mloss}, {}, DType::f64), N + V + 8},
      {Tensor::from_values(dx, a.logits.shape(), DType::f64),
       Tensor::from_values(mdx, a.logits.shape(), DType::f64), V + 8},
      {Tensor::from_values(lse, rows, DType::f64), Tensor::from_values(mlse, rows, DType::f64), V + 4}};
}

}  // namespace dew::ops
