// cast: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/cast/cast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Cast::reference(const Args& args) {
  // The truth is the input itself (or its truncation for integer targets); the only error allowed
  // is the output's own rounding, so the magnitude is zero.
  Tensor value = Tensor::empty(args.x.shape(), is_floating(args.to) ? DType::f64 : args.to);
  if (is_floating(args.to)) {
    auto v = args.x.to_f64_vector();
    std::copy(v.begin(), v.end(), value.data<double>());
    return {{value, Tensor::zeros(args.x.shape(), DType::f64), 0}};
  }
  cast_portable(args, value);
  return {{value, Tensor(), 0}};
}

}  // namespace dew::ops
