// softmax, log_softmax and cumsum row kernels, written once and compiled per instruction set (NOTE
// [kernel namespaces]): L lanes for the max and the sum, VectorMathExp for exp_f32 over libm.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/along_axis/along_axis.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/rows.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/isa.h"
#include "simd/lanes.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// One row; e holds n values of scratch when T is not Acc (the row is widened once, then exp'd in place).
template <int L, bool VectorMathExp, class Acc, class T>
void along_row(AlongAxisFn f, const T* x_row, T* y, int64_t n, Acc* e) {
  if (f == AlongAxisFn::cumsum) {
    Acc s = 0;
    for (int64_t i = 0; i < n; ++i) s += widen<Acc>(x_row[i]), y[i] = narrow<T>(s);
    return;
  }
  const Acc* x = row_as<Acc>(x_row, n, e);
  const Acc m = row_max<L, Acc>(x, n);
  if (f == AlongAxisFn::softmax) {  // exp(x - m) kept unrounded until the scaling: one exp per element
    Acc* ex;
    if constexpr (std::is_same_v<T, Acc>)
      ex = y;
    else
      ex = e;
    const Acc inv =
        Acc(1) / lane_sum<L, Acc>(n, [&](int64_t i) { return ex[i] = exp_with<VectorMathExp>(x[i] - m); });
    for (int64_t i = 0; i < n; ++i) y[i] = narrow<T>(ex[i] * inv);
  } else {
    const Acc log_s =
        std::log(lane_sum<L, Acc>(n, [&](int64_t i) { return exp_with<VectorMathExp>(x[i] - m); }));
    for (int64_t i = 0; i < n; ++i) y[i] = narrow<T>((x[i] - m) - log_s);
  }
}

#if DEW_HAS_FLOAT_VEC
// softmax or log_softmax of one row on FloatVec: the max, the exps (exp_nonpositive_rounding_to<T>; kept in e
// for softmax) summed in kVecWidth float lanes, then the row written, streamed where `stream` (NOTE
// [streaming large outputs]).
template <class T>
void softmax_row_vec(AlongAxisFn f, const T* x, T* y, int64_t n, float* e, bool stream) {
  const FloatVec m = row_max_vec(x, n);
  FloatVec sum = 0.0f;
  const auto add_exps = [&](int64_t i, FloatVec v) __attribute__((always_inline)) {
    if (f == AlongAxisFn::softmax) store_vec(e + i, v);  // e holds n rounded up to kVecWidth
    sum += v;
  };
  int64_t i = 0;
  for (; i + kVecWidth <= n; i += kVecWidth) {
    // The next row's lines, a step's worth at a time (NOTE [prefetching maps]): the thread's next row
    // follows this one, and the hardware prefetchers stop at page ends (a row of 1024 f32 is a page).
    prefetch_ahead<0>(x + i, kVecWidth, uintptr_t(n) * sizeof(T));
    add_exps(i, exp_nonpositive_rounding_to<T>(load_vec(x + i) - m));
  }
  if (i < n)
    add_exps(i,
             keep_first_lanes(exp_nonpositive_rounding_to<T>(load_vec(x + i, int(n - i)) - m), int(n - i)));
  const float s = lanes_sum(sum);
  if (f == AlongAxisFn::softmax) {
    const FloatVec inv = 1.0f / s;
    write_row_vec(y, n, stream, [&](int64_t i, int k) { return inv * load_vec(e + i, k); });
  } else {
    const FloatVec log_s = std::log(s);
    write_row_vec(y, n, stream, [&](int64_t i, int k) { return (load_vec(x + i, k) - m) - log_s; });
  }
}
// cumsum of one row on FloatVec: each vector's prefix sums (a tree of kVecWidth lanes), plus the
// running total, which the vector's last lane carries on. (The portable path adds one element at a time:
// a chain of dependent adds, bound by their latency.)
template <class T>
void cumsum_row_vec(const T* x, T* y, int64_t n) {
  FloatVec total = 0.0f;
  int64_t i = 0;
  for (; i + kVecWidth <= n; i += kVecWidth) {
    const FloatVec s = total + lane_prefix_sums(load_vec(x + i));
    store_vec(y + i, s);
    total = last_lane(s);
  }
  if (i < n) store_vec(y + i, total + lane_prefix_sums(load_vec(x + i, int(n - i))), int(n - i));
}
#endif

template <int L, bool VectorMathExp, class T>
void along_axis(const AlongAxisArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t axis = normalize_axis(a.axis, a.x.dim(), AlongAxis::name(a).data());
  RowLayout l = rows_along(a.x, {axis});
  const bool in_place = axis == a.x.dim() - 1;  // rows already run along the output's last dim
  Tensor y = in_place ? out : Tensor::empty(l.rows.shape(), a.dtype());
  const T* x = l.rows.data<T>();
  T* yp = y.data<T>();
  const int64_t rows = numel_of(l.kept_shape), n = l.length;
  [[maybe_unused]] const bool stream = streams_output<T>(rows * n);
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, n)), [&](int64_t r0, int64_t r1) {
#if DEW_HAS_FLOAT_VEC
    if constexpr (VectorMathExp && (std::is_same_v<T, float> || is_half_type<T>)) {
      if (rows_on_float_vec<T>()) {
        if (a.fn == AlongAxisFn::cumsum) {
          for (int64_t r = r0; r < r1; ++r) cumsum_row_vec(x + r * n, yp + r * n, n);
          return;
        }
        Scratch<float> e((n + kVecWidth - 1) / kVecWidth * kVecWidth);
        for (int64_t r = r0; r < r1; ++r) softmax_row_vec(a.fn, x + r * n, yp + r * n, n, e.data(), stream);
        if (stream) _mm_sfence();  // the non-temporal stores before the rows are handed on
        return;
      }
    }
#endif
    Scratch<Acc> widened = widening_buffer<Acc, T>(n);
    for (int64_t r = r0; r < r1; ++r)
      along_row<L, VectorMathExp, Acc>(a.fn, x + r * n, yp + r * n, n, widened.data());
  });
  if (!in_place) restore_order(y, l.order, out);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
