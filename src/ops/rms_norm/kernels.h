// rms_norm's row kernels, written once with L partial sums per reduction and built per tier: L = 1 in
// portable.cc, kLanes in cpu.cc (8 for avx2, 16 for avx512, where the compiler turns the L lanes into
// one vector register).
// NOTE [kernel namespaces]: each translation unit defines DEW_KERNEL_NS before including a kernels.h,
// so its instantiations get their own symbols and one tier's body can never stand in for another's;
// NOTE [instruction-set regions] (isa.h) says which instructions each body may use.
#pragma once

#include <cmath>

#include "ops/kernel_types.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/isa.h"
#include "simd/lanes.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

#if DEW_HAS_FLOAT_VEC
// Rows of rms_norm and its backward on FloatVec: each row read from L1 once per pass with bf16 or f16
// widened on load and narrowed on store, where the general body widens the row into a buffer first and
// narrows element by element. The same sums in the same order as lane_sum's kLanes partials (kVecWidth
// = kLanes; tail last), the same roundings per element. For bf16 and f16 rows only: f32 rows, which
// need no widening, run faster on the general body. Returns the row's rstd.
template <class T>
inline float rms_norm_row_vec(const T* x, const float* w, float eps, int64_t C, T* y) {
  static_assert(kVecWidth == kLanes, "the sums' partials are lane_sum's");
  const int64_t full = C - C % kVecWidth;
  FloatVec part = 0.0f;
  for (int64_t i = 0; i < full; i += kVecWidth) {
    const FloatVec v = load_vec(x + i);
    part += v * v;
  }
  float sum = lanes_sum(part);
  for (int64_t i = full; i < C; ++i) sum += widen<float>(x[i]) * widen<float>(x[i]);
  const float inv = 1.0f / std::sqrt(sum / float(C) + eps);
  const FloatVec inv_v(inv);
  const auto write = [&](int64_t i, int n) __attribute__((always_inline)) {
    store_vec(y + i, load_vec(x + i, n) * inv_v * load_vec(w + i, n), n);
  };
  for (int64_t i = 0; i < full; i += kVecWidth) write(i, kVecWidth);
  if (full < C) write(full, int(C - full));
  return inv;
}

// dx = rstd (dy w - x rstd^2 mean(dy w x)), and dw_part += dy x rstd when dw_part is given.
template <class T>
inline void rms_norm_backward_row_vec(const T* x, const T* dy, const float* w, float inv, int64_t C, T* dx,
                                      float* dw_part) {
  static_assert(kVecWidth == kLanes, "the sums' partials are lane_sum's");
  const int64_t full = C - C % kVecWidth;
  FloatVec part = 0.0f;
  for (int64_t i = 0; i < full; i += kVecWidth) part += load_vec(dy + i) * load_vec(x + i) * load_vec(w + i);
  float sum = lanes_sum(part);
  for (int64_t i = full; i < C; ++i) sum += widen<float>(dy[i]) * widen<float>(x[i]) * w[i];
  const FloatVec inv_v(inv), k(inv * inv * sum / float(C));
  const auto write = [&](int64_t i, int n) __attribute__((always_inline)) {
    const FloatVec dyv = load_vec(dy + i, n), xv = load_vec(x + i, n);
    store_vec(dx + i, inv_v * (dyv * load_vec(w + i, n) - xv * k), n);
    if (dw_part) store_vec(dw_part + i, load_vec(dw_part + i, n) + dyv * xv * inv_v, n);
  };
  for (int64_t i = 0; i < full; i += kVecWidth) write(i, kVecWidth);
  if (full < C) write(full, int(C - full));
}
#endif

template <int L, class T, class R>
void rms_norm_forward(const RmsNormArgs& a, Tensor& y_out, Tensor& rstd_out) {
  using Acc = AccumulatorOf<T>;
  Tensor xc = a.x.contiguous();
  const T* x = xc.data<T>();
  T* y = y_out.data<T>();
  R* rstd = rstd_out.data<R>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  const Scratch<Acc> w_values = channel_values<Acc, T>(a.weight, C, Acc(1));
  const Acc* w = w_values.data();
  const Acc eps = Acc(a.eps);
  bool rows_on_vec = false;  // bf16 and f16 rows where rows_on_float_vec: then no widening buffer
#if DEW_HAS_FLOAT_VEC
  if constexpr (is_half_type<T>) rows_on_vec = rows_on_float_vec<T>();
#endif
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
    Scratch<Acc> widened = widening_buffer<Acc, T>(rows_on_vec ? 0 : C);
    for (int64_t r = r0; r < r1; ++r) {
#if DEW_HAS_FLOAT_VEC
      if constexpr (is_half_type<T>) {  // the vector rows are bf16's and f16's only
        if (rows_on_vec) {
          rstd[r] = R(rms_norm_row_vec(x + r * C, w, eps, C, y + r * C));
          continue;
        }
      }
#endif
      const Acc* xr = row_as<Acc>(x + r * C, C, widened.data());
      T* yr = y + r * C;
      const Acc inv =
          Acc(1) / std::sqrt(lane_sum<L, Acc>(C, [&](int64_t i) { return xr[i] * xr[i]; }) / Acc(C) + eps);
      rstd[r] = R(inv);
      for (int64_t i = 0; i < C; ++i) yr[i] = narrow<T>(xr[i] * inv * w[i]);
    }
  });
}

template <int L, class T, class R>
void rms_norm_backward(const RmsNormBackwardArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  Tensor dyc = a.dy.contiguous(), xc = a.x.contiguous(), rc = a.rstd.contiguous();
  const T* dy = dyc.data<T>();
  const T* x = xc.data<T>();
  const R* rstd = rc.data<R>();
  T* dx = outs[0].data<T>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  const Scratch<Acc> w_values = channel_values<Acc, T>(a.weight, C, Acc(1));
  const Acc* w = w_values.data();
  const bool has_w = a.weight.defined();
  const int64_t blocks = (rows + kWeightGradBlockRows - 1) / kWeightGradBlockRows;
  Scratch<Acc> dw_blocks(has_w ? blocks * C : 0, Acc(0));
  Acc* dw_parts = dw_blocks.data();
  bool rows_on_vec = false;  // bf16 and f16 rows where rows_on_float_vec: then no widening buffers
#if DEW_HAS_FLOAT_VEC
  if constexpr (is_half_type<T>) rows_on_vec = rows_on_float_vec<T>();
#endif
  const int64_t widened_C = rows_on_vec ? 0 : C;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    Scratch<Acc> x_widened = widening_buffer<Acc, T>(widened_C),
                 dy_widened = widening_buffer<Acc, T>(widened_C);
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t r = b * kWeightGradBlockRows; r < std::min(rows, (b + 1) * kWeightGradBlockRows); ++r) {
#if DEW_HAS_FLOAT_VEC
        if constexpr (is_half_type<T>) {
          if (rows_on_vec) {
            rms_norm_backward_row_vec(x + r * C, dy + r * C, w, float(rstd[r]), C, dx + r * C,
                                      has_w ? dw_parts + b * C : nullptr);
            continue;
          }
        }
#endif
        const Acc* xr = row_as<Acc>(x + r * C, C, x_widened.data());
        const Acc* dyr = row_as<Acc>(dy + r * C, C, dy_widened.data());
        T* dxr = dx + r * C;
        const Acc inv = Acc(rstd[r]);
        // dx = rstd * (dy*w - x * rstd^2 * mean(dy*w*x))
        const Acc k =
            inv * inv * lane_sum<L, Acc>(C, [&](int64_t i) { return dyr[i] * xr[i] * w[i]; }) / Acc(C);
        for (int64_t i = 0; i < C; ++i) dxr[i] = narrow<T>(inv * (dyr[i] * w[i] - xr[i] * k));
        if (has_w) {
          Acc* dwb = dw_parts + b * C;
          for (int64_t i = 0; i < C; ++i) dwb[i] += dyr[i] * xr[i] * inv;
        }
      }
    }
  });
  if (!has_w) return;
  T* dw = outs[1].data<T>();
  Scratch<Acc> sums(C);
  sum_block_partials(dw_parts, blocks, C, sums.data(), dw);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
