// unary: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/unary/scalar.h"
#include "ops/unary/unary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Unary::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): relative error for most functions; log's error is absolute
  // near 1, so its scale adds 1; the activations carry their argument's error by a Lipschitz bound.
  std::vector<double> x = a.x.to_f64_vector(), y(x.size()), m(x.size());
  int64_t steps = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = unary_value<double>(a.fn, x[i]);
    switch (a.fn) {
      case UnaryFn::neg:
      case UnaryFn::abs:
      case UnaryFn::square:
      case UnaryFn::relu:
        m[i] = std::fabs(y[i]);
        break;
      case UnaryFn::log:
        m[i] = std::fabs(y[i]) + 1.0, steps = 4;
        break;
      case UnaryFn::silu:
      case UnaryFn::gelu:
      case UnaryFn::gelu_tanh:
        m[i] = 1.13 * std::fabs(x[i]) + std::fabs(y[i]), steps = 8;
        break;
      default:
        m[i] = std::fabs(y[i]), steps = 4;
    }
  }
  return {{Tensor::from_values(y, a.x.shape(), DType::f64), Tensor::from_values(m, a.x.shape(), DType::f64),
           steps}};
}

}  // namespace dew::ops
