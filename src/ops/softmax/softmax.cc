// softmax, log_softmax and cumsum: reference with error magnitudes, portable implementation over
// contiguous rows (the axis moved last), cases and public functions.
#include "ops/softmax/softmax.h"

#include <cmath>
#include <limits>

#include "ops/rows.h"

namespace dew::ops {
namespace {}  // namespace

std::string_view AlongAxis::name(const Args& a) {
  switch (a.fn) {
    case AlongAxisFn::softmax:
      return "softmax";
    case AlongAxisFn::log_softmax:
      return "log_softmax";
    case AlongAxisFn::cumsum:
      return "cumsum";
  }
  return "?";
}

std::vector<OutputSpec> AlongAxis::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()), "[{}] x is {}; expected a floating dtype", op, a.x.describe());
  normalize_axis(a.axis, a.x.dim(), op);
  return {{a.x.shape(), a.dtype()}};
}

std::vector<Truth> AlongAxis::reference(const Args& args) {
  // Magnitudes (NOTE [certified bound]): softmax is relative to each y_i, widened by the rounding of
  // its exp argument |x_i - max|; log_softmax's error is absolute; cumsum's is sum |x| so far.
  int64_t axis = normalize_axis(args.axis, args.x.dim(), "softmax");
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

const select::Registry<AlongAxisArgs>& AlongAxis::registry() {
  static const select::Registry<AlongAxisArgs> r = [] {
    select::Registry<AlongAxisArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_along_axis_cuda, reg);
    avx512::add_along_axis_cpu(reg);
    avx2::add_along_axis_cpu(reg);
    add_along_axis_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<AlongAxisArgs>> AlongAxis::cases(std::string_view op) {
  AlongAxisFn fn = op == "softmax"       ? AlongAxisFn::softmax
                   : op == "log_softmax" ? AlongAxisFn::log_softmax
                                         : AlongAxisFn::cumsum;
  auto make = [fn](Shape s, int64_t axis, double scale) {
    return [=](DType t, RandomKey k) { return AlongAxisArgs{random_input(s, t, k, scale), axis, fn}; };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"last_axis", {"ci"}, all, make({6, 500}, -1, 3.0)},
          {"first_axis", {"ci", "edge"}, all, make({50, 3, 4}, 0, 3.0)},
          {"large_logits", {"ci", "edge"}, all, make({64, 300}, 1, 40.0)},
          {"attention_scores", {"bench"}, {DType::f32, DType::f16}, make({48, 1024, 1024}, -1, 3.0)}};
}

}  // namespace dew::ops

namespace dew {
Tensor softmax(const Tensor& x, int64_t axis) {
  return ops::run_op<ops::AlongAxis>(ops::AlongAxisArgs{x, axis, ops::AlongAxisFn::softmax})[0];
}
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return ops::run_op<ops::AlongAxis>(ops::AlongAxisArgs{x, axis, ops::AlongAxisFn::log_softmax})[0];
}
Tensor cumsum(const Tensor& x, int64_t axis) {
  return ops::run_op<ops::AlongAxis>(ops::AlongAxisArgs{x, axis, ops::AlongAxisFn::cumsum})[0];
}
}  // namespace dew
