// layer_norm: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/layer_norm/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> LayerNorm::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): the mean's error (gamma_C mean|x|) shifts every centered
  // value, so each term carries (|x - mean| + mean|x|) rstd; sums over C or rows carry their |terms|.
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  auto x = a.x.to_f64_vector();
  auto w = a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>(size_t(C), 1.0);
  auto b = a.bias.defined() ? a.bias.to_f64_vector() : std::vector<double>(size_t(C), 0.0);
  const Shape rs(a.x.shape().begin(), a.x.shape().end() - 1);  // a statistic per row
  if (!a.backward) {
    std::vector<double> y(x.size()), my(x.size()), mean(static_cast<size_t>(rows)), mmean(mean.size()),
        rstd(mean.size());
    for (int64_t r = 0; r < rows; ++r) {  // rows
      const double* xr = x.data() + r * C;
      double mu = 0, abs_mean = 0, var = 0;
      for (int64_t i = 0; i < C; ++i) mu += xr[i], abs_mean += std::fabs(xr[i]);
      mu /= double(C);
      abs_mean /= double(C);
      for (int64_t i = 0; i < C; ++i) var += (xr[i] - mu) * (xr[i] - mu);
      const double rr = 1.0 / std::sqrt(var / double(C) + a.eps);
      mean[size_t(r)] = mu, mmean[size_t(r)] = abs_mean, rstd[size_t(r)] = rr;
      for (int64_t i = 0; i < C; ++i) {  // channels
        y[size_t(r * C + i)] = (xr[i] - mu) * rr * w[size_t(i)] + b[size_t(i)];
        my[size_t(r * C + i)] =
            (std::fabs(xr[i] - mu) + abs_mean) * rr * std::fabs(w[size_t(i)]) + std::fabs(b[size_t(i)]);
      }
    }
    return {{Tensor::from_values(y, a.x.shape(), DType::f64),
             Tensor::from_values(my, a.x.shape(), DType::f64), C + 8},
            {Tensor::from_values(mean, rs, DType::f64), Tensor::from_values(mmean, rs, DType::f64), C + 1},
            {Tensor::from_values(rstd, rs, DType::f64), Tensor::from_values(rstd, rs, DType::f64), C + 6}};
  }
  auto dy = a.dy.to_f64_vector(), mean = a.mean.to_f64_vector(), rstd = a.rstd.to_f64_vector();
  std::vector<double> dx(x.size()), mdx(x.size()), dw(size_t(C), 0), mdw(size_t(C), 0), db(size_t(C), 0),
      mdb(size_t(C), 0);
  for (int64_t r = 0; r < rows; ++r) {  // rows
    const double mu = mean[size_t(r)], rr = rstd[size_t(r)];
    double mg = 0, mgx = 0, amg = 0, amgx = 0, abs_mean = 0;
    for (int64_t i = 0; i < C; ++i) {
      size_t k = size_t(r * C + i);
      const double g = dy[k] * w[size_t(i)], xh = (x[k] - mu) * rr;
      mg += g, mgx += g * xh, amg += std::fabs(g), amgx += std::fabs(g * xh), abs_mean += std::fabs(x[k]);
    }
    mg /= double(C), mgx /= double(C), amg /= double(C), amgx /= double(C), abs_mean /= double(C);
    const double shift = 1 + (abs_mean + std::fabs(mu)) * rr;  // the centered value's rounding, relative
    for (int64_t i = 0; i < C; ++i) {                          // channels
      size_t k = size_t(r * C + i);
      const double g = dy[k] * w[size_t(i)], xh = (x[k] - mu) * rr;
      dx[k] = rr * (g - mg - xh * mgx);
      mdx[k] = rr * (std::fabs(g) + amg + std::fabs(xh) * amgx) * shift;
      dw[size_t(i)] += dy[k] * xh, mdw[size_t(i)] += std::fabs(dy[k] * xh) * shift;
      db[size_t(i)] += dy[k], mdb[size_t(i)] += std::fabs(dy[k]);
    }
  }
  std::vector<Truth> out{{Tensor::from_values(dx, a.x.shape(), DType::f64),
                          Tensor::from_values(mdx, a.x.shape(), DType::f64), 2 * C + 10}};
  if (a.weight.defined()) {
    out.push_back(
        {Tensor::from_values(dw, {C}, DType::f64), Tensor::from_values(mdw, {C}, DType::f64), rows + 8});
    out.push_back(
        {Tensor::from_values(db, {C}, DType::f64), Tensor::from_values(mdb, {C}, DType::f64), rows + 2});
  }
  return out;
}

}  // namespace dew::ops
