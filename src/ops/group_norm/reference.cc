// group_norm's float64 reference: each (image, group) row's mean and biased variance in plain loops,
// with layer_norm's magnitudes (NOTE [certified bound]): the mean's error shifts every centered value,
// so each term carries (|x - mean| + mean|x|) rstd |w| + |b|.
#include <cmath>

#include "ops/group_norm/group_norm.h"

namespace dew::ops {

std::vector<Truth> GroupNorm::reference(const Args& a) {
  const int64_t B = a.x.size(0), C = a.x.size(1), G = a.groups, positions = a.x.numel() / (B * C);
  const int64_t N = (C / G) * positions;  // one row: the group's channels x positions
  const std::vector<double> x = a.x.to_f64_vector();
  const std::vector<double> w =
      a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>(size_t(C), 1.0);
  const std::vector<double> b =
      a.bias.defined() ? a.bias.to_f64_vector() : std::vector<double>(size_t(C), 0.0);
  std::vector<double> y(x.size()), my(x.size()), mean(size_t(B * G)), mmean(mean.size()), rstd(mean.size());
  for (int64_t r = 0; r < B * G; ++r) {
    const double* xr = x.data() + r * N;
    double mu = 0, abs_mean = 0, var = 0;
    for (int64_t i = 0; i < N; ++i) mu += xr[i], abs_mean += std::fabs(xr[i]);
    mu /= double(N), abs_mean /= double(N);
    for (int64_t i = 0; i < N; ++i) var += (xr[i] - mu) * (xr[i] - mu);
    const double rr = 1.0 / std::sqrt(var / double(N) + a.eps);
    mean[size_t(r)] = mu, mmean[size_t(r)] = abs_mean, rstd[size_t(r)] = rr;
    for (int64_t i = 0; i < N; ++i) {
      const size_t c = size_t((r % G) * (C / G) + i / positions), k = size_t(r * N + i);
      y[k] = (xr[i] - mu) * rr * w[c] + b[c];
      my[k] = (std::fabs(xr[i] - mu) + abs_mean) * rr * std::fabs(w[c]) + std::fabs(b[c]);
    }
  }
  const Shape stats{B, G};
  return {
      {Tensor::from_values(y, a.x.shape(), DType::f64), Tensor::from_values(my, a.x.shape(), DType::f64),
       N + 8},
      {Tensor::from_values(mean, stats, DType::f64), Tensor::from_values(mmean, stats, DType::f64), N + 1},
      {Tensor::from_values(rstd, stats, DType::f64), Tensor::from_values(rstd, stats, DType::f64), N + 6}};
}

}  // namespace dew::ops
