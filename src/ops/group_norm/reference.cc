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

namespace dew::ops {

// group_norm_backward's reference, with layer_norm_backward's magnitudes on each row.
std::vector<Truth> GroupNormBackward::reference(const Args& a) {
  const int64_t B = a.x.size(0), C = a.x.size(1), G = a.groups, positions = a.x.numel() / (B * C);
  const int64_t Cg = C / G, N = Cg * positions, rows = B * G;
  const std::vector<double> x = a.x.to_f64_vector(), dy = a.dy.to_f64_vector(), mean = a.mean.to_f64_vector(),
                            rstd = a.rstd.to_f64_vector();
  const std::vector<double> w =
      a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>(size_t(C), 1.0);
  std::vector<double> dx(x.size()), mdx(x.size()), dw(size_t(C), 0), mdw(size_t(C), 0), db(size_t(C), 0),
      mdb(size_t(C), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double mu = mean[size_t(r)], rr = rstd[size_t(r)];
    const auto channel = [&](int64_t i) { return size_t((r % G) * Cg + i / positions); };
    double mg = 0, mgx = 0, amg = 0, amgx = 0, abs_mean = 0;
    for (int64_t i = 0; i < N; ++i) {
      const size_t k = size_t(r * N + i);
      const double g = dy[k] * w[channel(i)], xh = (x[k] - mu) * rr;
      mg += g, mgx += g * xh, amg += std::fabs(g), amgx += std::fabs(g * xh), abs_mean += std::fabs(x[k]);
    }
    mg /= double(N), mgx /= double(N), amg /= double(N), amgx /= double(N), abs_mean /= double(N);
    const double shift = 1 + (abs_mean + std::fabs(mu)) * rr;  // the centered value's rounding, relative
    for (int64_t i = 0; i < N; ++i) {
      const size_t k = size_t(r * N + i), c = channel(i);
      const double g = dy[k] * w[c], xh = (x[k] - mu) * rr;
      dx[k] = rr * (g - mg - xh * mgx);
      mdx[k] = rr * (std::fabs(g) + amg + std::fabs(xh) * amgx) * shift;
      dw[c] += dy[k] * xh, mdw[c] += std::fabs(dy[k] * xh) * shift;
      db[c] += dy[k], mdb[c] += std::fabs(dy[k]);
    }
  }
  std::vector<Truth> out{{Tensor::from_values(dx, a.x.shape(), DType::f64),
                          Tensor::from_values(mdx, a.x.shape(), DType::f64), 2 * N + 10}};
  if (a.weight.defined()) {
    const int64_t terms = B * positions;
    out.push_back(
        {Tensor::from_values(dw, {C}, DType::f64), Tensor::from_values(mdw, {C}, DType::f64), terms + 8});
    out.push_back(
        {Tensor::from_values(db, {C}, DType::f64), Tensor::from_values(mdb, {C}, DType::f64), terms + 2});
  }
  return out;
}

}  // namespace dew::ops
