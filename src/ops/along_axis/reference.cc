// softmax, log_softmax and cumsum: the float64 references — plain loops over double, the specification every
// implementation is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/along_axis/along_axis.h"
#include "ops/rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> AlongAxis::reference(const Args& args) {
  // Magnitudes (NOTE [certified bound]): softmax is relative to each y_i, widened by the rounding of
  // its exp argument |x_i - max|; log_softmax's error is absolute; cumsum's is sum |x| so far.
  int64_t axis = normalize_axis(args.axis, args.x.dim(), AlongAxis::name(args).data());
  RowLayout l = rows_along(args.x, {axis});
  const double* x = l.rows.data<double>();
  const int64_t rows = numel_of(l.kept_shape), n = l.length;
  Tensor y = Tensor::empty(l.rows.shape(), DType::f64), m = Tensor::empty(l.rows.shape(), DType::f64);
  double* yp = y.data<double>();
  double* mp = m.data<double>();
  for (int64_t r = 0; r < rows; ++r) {  // rows along the axis
    const double* row = x + r * n;
    double mx0 = -INFINITY, sum = 0, prefix = 0;
    for (int64_t i = 0; i < n; ++i) mx0 = std::max(mx0, row[i]);
    for (int64_t i = 0; i < n; ++i) sum += std::exp(row[i] - mx0);
    for (int64_t i = 0; i < n; ++i) {  // the definitions, term by term
      if (args.fn == AlongAxisFn::softmax)
        yp[r * n + i] = std::exp(row[i] - mx0) / sum;
      else if (args.fn == AlongAxisFn::log_softmax)
        yp[r * n + i] = row[i] - mx0 - std::log(sum);
      else
        yp[r * n + i] = prefix += row[i];
    }
    double mx = -INFINITY, abs_prefix = 0;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, row[i]);
    for (int64_t i = 0; i < n; ++i) {
      double spread = mx - row[i];
      double yi = yp[r * n + i];
      abs_prefix += std::fabs(row[i]);
      if (args.fn == AlongAxisFn::softmax)
        mp[r * n + i] = yi * (1 + spread);
      else if (args.fn == AlongAxisFn::log_softmax)
        mp[r * n + i] = std::fabs(yi) + 1 + spread + std::fabs(mx);
      else
        mp[r * n + i] = abs_prefix;
    }
  }
  Tensor value = Tensor::empty(args.x.shape(), DType::f64), mag = Tensor::empty(args.x.shape(), DType::f64);
  restore_order(y, l.order, value);
  restore_order(m, l.order, mag);
  return {{value, mag, n + 4}};
}

}  // namespace dew::ops
