// binary: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/binary/binary.h"
#include "ops/binary/scalar.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Binary::reference(const Args& args) {
  Shape shape = infer(args)[0].shape;
  Tensor a = args.a.expand(shape).contiguous(), b = args.b.expand(shape).contiguous();
  std::vector<double> av = a.to_f64_vector(), bv = b.to_f64_vector(), y(av.size()), m(av.size());
  for (size_t i = 0; i < av.size(); ++i) {
    y[i] = binary_value<double>(args.fn, av[i], bv[i]);
    // One rounding of the exact result, but for add/sub the scale is |a|+|b| (cancellation) and for
    // pow = exp(b log a) the error of log a is amplified by |b log a|.
    if (args.fn == BinaryFn::add || args.fn == BinaryFn::sub)
      m[i] = std::fabs(av[i]) + std::fabs(bv[i]);
    else if (args.fn == BinaryFn::pow)
      m[i] = std::fabs(y[i]) * (1 + std::fabs(bv[i] * std::log(av[i])));
    else
      m[i] = std::fabs(y[i]);
  }
  if (is_comparison(args.fn)) return {{Tensor::from_values(y, shape, DType::boolean), Tensor(), 0}};
  return {{Tensor::from_values(y, shape, DType::f64), Tensor::from_values(m, shape, DType::f64),
           args.fn == BinaryFn::pow ? 4 : 1}};
}

}  // namespace dew::ops
