// reduce: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/reduce/reduce.h"
#include "ops/reduce/reduce_row.h"
#include "ops/rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Reduce::reference(const Args& args) {
  // Magnitudes (NOTE [certified bound]): a sum of n terms scales with sum |x|; max/min/argmax are
  // exact; logsumexp's error is absolute, from exp's argument (|x - max|) and the log of the sum.
  Shape out_shape = infer(args)[0].shape;
  RowLayout l = rows_along(args.x, normalize_axes(args.axes, args.x.dim(), "reduce"));
  const double* x = l.rows.data<double>();
  const int64_t rows = numel_of(l.kept_shape), n = l.length;
  std::vector<double> y(static_cast<size_t>(rows)), m(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {  // rows of the kept axes
    const double* row = x + r * n;
    y[size_t(r)] = reduce_row<double>(args.fn, row, n);
    double abs_sum = 0, mx = reduce_row<double>(ReduceFn::max, row, n), spread = 0;
    for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(row[i]), spread = std::max(spread, mx - row[i]);
    switch (args.fn) {
      case ReduceFn::sum:
        m[size_t(r)] = abs_sum;
        break;
      case ReduceFn::mean:
        m[size_t(r)] = abs_sum / double(n);
        break;
      case ReduceFn::logsumexp:
        m[size_t(r)] = std::fabs(y[size_t(r)]) + std::fabs(mx) + 1 + spread;
        break;
      default:
        m[size_t(r)] = 0;
    }
  }
  if (args.fn == ReduceFn::argmax) return {{Tensor::from_values(y, out_shape, DType::i64), Tensor(), 0}};
  return {
      {Tensor::from_values(y, out_shape, DType::f64), Tensor::from_values(m, out_shape, DType::f64), n + 4}};
}

}  // namespace dew::ops
