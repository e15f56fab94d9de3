// conv2d's float64 reference: every tap of the convolution in plain loops, each adding its product to
// the element it feeds — the output (forward), the input's gradient or the weight's gradient — with
// the sum of the products' absolute values as that element's error magnitude.
#include <cmath>

#include "ops/conv2d/conv2d.h"

namespace dew::ops {

std::vector<Truth> Conv2d::reference(const Args& a) {
  const Conv2dGeometry g = conv2d_geometry(a);
  const Shape out_shape = infer(a)[0].shape;
  const std::vector<double> dy = a.dy.defined() ? a.dy.to_f64_vector() : std::vector<double>();
  const std::vector<double> x = a.x.defined() ? a.x.to_f64_vector() : std::vector<double>();
  const std::vector<double> w = a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>();
  const int64_t n = numel_of(out_shape);
  std::vector<double> y(static_cast<size_t>(n), 0.0), mag(static_cast<size_t>(n), 0.0);
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t i = 0; i < g.OH; ++i)
        for (int64_t j = 0; j < g.OW; ++j)
          for (int64_t c = 0; c < g.Cg; ++c)
            for (int64_t u = 0; u < g.kh; ++u)
              for (int64_t v = 0; v < g.kw; ++v) {
                const int64_t h = i * g.sh - g.ph + u * g.dh, s = j * g.sw - g.pw + v * g.dw;
                if (h < 0 || h >= g.H || s < 0 || s >= g.W) continue;  // zero padding
                const int64_t ci = (o / g.Og) * g.Cg + c;
                const size_t xi = size_t(((b * g.C + ci) * g.H + h) * g.W + s);
                const size_t wi = size_t(((o * g.Cg + c) * g.kh + u) * g.kw + v);
                const size_t yi = size_t(((b * g.O + o) * g.OH + i) * g.OW + j);
                double p = 0;
                size_t at = 0;
                switch (a.pass) {
                  case ConvPass::forward:
                    p = x[xi] * w[wi], at = yi;
                    break;
                  case ConvPass::input_grad:
                    p = dy[yi] * w[wi], at = xi;
                    break;
                  case ConvPass::weight_grad:
                    p = dy[yi] * x[xi], at = wi;
                    break;
                }
                y[at] += p;
                mag[at] += std::fabs(p);
              }
  int64_t terms = g.Cg * g.kh * g.kw;
  if (a.pass == ConvPass::input_grad) terms = g.Og * g.kh * g.kw;
  if (a.pass == ConvPass::weight_grad) terms = g.B * g.OH * g.OW;
  if (a.bias.defined()) {
    const std::vector<double> bias = a.bias.to_f64_vector();
    for (int64_t e = 0; e < n; ++e) {
      const double bo = bias[size_t((e / (g.OH * g.OW)) % g.O)];
      y[size_t(e)] += bo;
      mag[size_t(e)] += std::fabs(bo);
    }
  }
  return {{Tensor::from_values(y, out_shape, DType::f64), Tensor::from_values(mag, out_shape, DType::f64),
           terms + 3}};
}

}  // namespace dew::ops
