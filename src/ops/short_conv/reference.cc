// short_conv: the float64 reference, each element with the magnitude of its terms (NOTE [certified
// bound]): W products and the bias summed.
#include <cmath>

#include "ops/short_conv/short_conv.h"

namespace dew::ops {

std::vector<Truth> ShortConv::reference(const Args& a) {
  const int64_t B = a.x.size(0), T = a.x.size(1), C = a.x.size(2), W = a.weight.size(1);
  const std::vector<double> x = a.x.to_f64_vector(), w = a.weight.to_f64_vector();
  const std::vector<double> bias =
      a.bias.defined() ? a.bias.to_f64_vector() : std::vector<double>(size_t(C), 0.0);
  const std::vector<double> init = a.initial.defined() ? a.initial.to_f64_vector() : std::vector<double>();
  const Tensor seg = a.segments.defined() ? a.segments.contiguous() : Tensor();
  // The input at time s (s < 0: from initial, or zero).
  const auto input = [&](int64_t b, int64_t s, int64_t c) {
    if (s >= 0) return x[size_t((b * T + s) * C + c)];
    return init.empty() ? 0.0 : init[size_t((b * (W - 1) + (W - 1 + s)) * C + c)];
  };
  std::vector<double> out(x.size()), m(x.size());
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int64_t> start =
        seg.defined() ? document_start_of(seg.data<int64_t>(), T, b) : std::vector<int64_t>();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        double y = bias[size_t(c)], mag = std::fabs(bias[size_t(c)]);
        for (int64_t j = 0; j < W; ++j) {
          const int64_t s = t - (W - 1) + j;
          if (!short_conv_reaches(start, s, t)) continue;
          const double term = w[size_t(c * W + j)] * input(b, s, c);
          y += term;
          mag += std::fabs(term);
        }
        if (a.activation == Activation::silu) {  // y s(y): its slope is at most 1.1, its rounding |y|
          y = short_conv_silu(y);
          mag = 1.1 * mag + std::fabs(y);
        }
        out[size_t((b * T + t) * C + c)] = y;
        m[size_t((b * T + t) * C + c)] = mag;
      }
  }
  return {{Tensor::from_values(out, a.x.shape(), DType::f64), Tensor::from_values(m, a.x.shape(), DType::f64),
           W + 5}};
}

}  // namespace dew::ops
