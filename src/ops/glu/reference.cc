// glu: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/activation.h"
#include "ops/glu/glu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Glu::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): the activation's own (activation_lipschitz |g| + |act|) times
  // |up|; its derivative's terms are bounded by 1 + |g| + 0.11 |g|^3 (the tanh-GELU's are the largest).
  auto g = a.gate.to_f64_vector(), u = a.up.to_f64_vector();
  auto dy = a.backward ? a.dy.to_f64_vector() : std::vector<double>();
  const double lip = activation_lipschitz(a.activation);
  std::vector<double> y0(g.size()), m0(g.size()), y1(a.backward ? g.size() : 0), m1(y1.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double f = apply_activation(a.activation, g[i]), f_mag = lip * std::fabs(g[i]) + std::fabs(f);
    if (!a.backward) {
      y0[i] = f * u[i];
      m0[i] = f_mag * std::fabs(u[i]);
      continue;
    }
    const double df = activation_derivative(a.activation, g[i]);
    const double ag = std::fabs(g[i]);
    y0[i] = dy[i] * u[i] * df;
    m0[i] = std::fabs(dy[i] * u[i]) * (1 + ag + 0.11 * ag * ag * ag);
    y1[i] = dy[i] * f;
    m1[i] = std::fabs(dy[i]) * f_mag;
  }
  std::vector<Truth> out{{Tensor::from_values(y0, a.gate.shape(), DType::f64),
                          Tensor::from_values(m0, a.gate.shape(), DType::f64), 12}};
  if (a.backward)
    out.push_back({Tensor::from_values(y1, a.gate.shape(), DType::f64),
                   Tensor::from_values(m1, a.gate.shape(), DType::f64), 12});
  return out;
}

}  // namespace dew::ops
