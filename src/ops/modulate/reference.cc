// modulate and gated_add: the float64 references, each element with the magnitude of its terms
// (NOTE [certified bound]): modulate rounds 1 + scale, the product and the sum; gated_add the
// product and the sum.
#include <cmath>

#include "ops/modulate/modulate.h"

namespace dew::ops {

std::vector<Truth> Modulate::reference(const Args& a) {
  const int64_t B = a.x.size(0), T = a.x.size(1), C = a.x.size(2);
  const bool mod = a.fn == ModulateFn::modulate;
  const std::vector<double> x = a.x.to_f64_vector(), v = a.a.to_f64_vector(),
                            w = mod ? a.b.to_f64_vector() : a.y.to_f64_vector();
  std::vector<double> out(x.size()), m(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const size_t i = size_t((b * T + t) * C + c), bc = size_t(b * C + c);
        if (mod) {  // x (1 + scale) + shift
          out[i] = x[i] * (1.0 + w[bc]) + v[bc];
          m[i] = std::fabs(x[i]) * (1.0 + std::fabs(w[bc])) + std::fabs(v[bc]);
        } else {  // residual + gate y
          out[i] = x[i] + v[bc] * w[i];
          m[i] = std::fabs(x[i]) + std::fabs(v[bc] * w[i]);
        }
      }
  return {{Tensor::from_values(out, a.x.shape(), DType::f64), Tensor::from_values(m, a.x.shape(), DType::f64),
           mod ? 3 : 2}};
}

}  // namespace dew::ops
