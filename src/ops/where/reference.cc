// where: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/where/where.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Where::reference(const Args& args) {
  Shape s = infer(args)[0].shape;
  auto c = args.condition.expand(s).to_f64_vector(), a = args.a.expand(s).to_f64_vector(),
       b = args.b.expand(s).to_f64_vector();
  std::vector<double> y(c.size());
  for (size_t i = 0; i < c.size(); ++i) y[i] = c[i] != 0 ? a[i] : b[i];
  DType out = is_floating(args.dtype()) ? DType::f64 : args.dtype();
  return {{Tensor::from_values(y, s, out), is_floating(out) ? Tensor::zeros(s, DType::f64) : Tensor(), 0}};
}

}  // namespace dew::ops
