// layer_norm's row kernels, written once with L partial lanes and compiled per instruction set
// (NOTE [kernel namespaces]). Weight and bias gradients sum fixed blocks of rows in order.
#pragma once

#include <cmath>
#include <vector>

#include "ops/kernel_types.h"
#include "ops/layer_norm/layer_norm.h"
#include "ops/map_elements.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/isa.h"
#include "simd/lanes.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

#if DEW_HAS_FLOAT_VEC
// One row of layer_norm on FloatVec, for bf16 and f16 rows: loads widen and stores narrow in registers
// where the general body widens the row into a buffer and narrows element by element (dtype.h's f16
// conversions, vectorized by the compiler, held f16 rows to a quarter of triad). The same sums in the
// same order as lane_sum's kLanes partials (kVecWidth = kLanes; tail last), the same roundings per
// element. Returns the row's mean and rstd.
struct RowMoments {
  float mean, rstd;
};
template <class T>
inline RowMoments layer_norm_row_vec(const T* x, const float* w, const float* b, float eps, int64_t C, T* y) {
  static_assert(kVecWidth == kLanes, "the sums' partials are lane_sum's");
  const int64_t full = C - C % kVecWidth;
  FloatVec part = 0.0f;
  for (int64_t i = 0; i < full; i += kVecWidth) part += load_vec(x + i);
  float sum = lanes_sum(part);
  for (int64_t i = full; i < C; ++i) sum += widen<float>(x[i]);
  const float mu = sum / float(C);
  const FloatVec mean(mu);
  part = 0.0f;
  for (int64_t i = 0; i < full; i += kVecWidth) {
    const FloatVec d = load_vec(x + i) - mean;
    part += d * d;
  }
  float squares = lanes_sum(part);
  for (int64_t i = full; i < C; ++i) {
    const float d = widen<float>(x[i]) - mu;
    squares += d * d;
  }
  const float rs = 1.0f / std::sqrt(squares / float(C) + eps);
  const FloatVec rstd(rs);
  const auto write = [&](int64_t i, int n) __attribute__((always_inline)) {
    store_vec(y + i, (load_vec(x + i, n) - mean) * rstd * load_vec(w + i, n) + load_vec(b + i, n), n);
  };
  for (int64_t i = 0; i < full; i += kVecWidth) write(i, kVecWidth);
  if (full < C) write(full, int(C - full));
  return {mu, rs};
}
#endif

template <int L, class T>
void layer_norm_forward(const LayerNormArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  Tensor xc = a.x.contiguous();
  const T* x = xc.data<T>();
  T* y = outs[0].data<T>();
  Acc* mean_out = outs[1].data<Acc>();
  Acc* rstd_out = outs[2].data<Acc>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  const Scratch<Acc> w_values = channel_values<Acc, T>(a.weight, C, Acc(1)),
                     b_values = channel_values<Acc, T>(a.bias, C, Acc(0));
  const Acc *w = w_values.data(), *b = b_values.data();
  bool rows_on_vec = false;  // bf16 and f16 rows where rows_on_float_vec: then no widening buffer
#if DEW_HAS_FLOAT_VEC
  if constexpr (is_half_type<T>) rows_on_vec = rows_on_float_vec<T>();
#endif
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
    Scratch<Acc> widened = widening_buffer<Acc, T>(rows_on_vec ? 0 : C);
    for (int64_t r = r0; r < r1; ++r) {
#if DEW_HAS_FLOAT_VEC
      if constexpr (is_half_type<T>) {
        if (rows_on_vec) {
          const RowMoments m = layer_norm_row_vec(x + r * C, w, b, Acc(a.eps), C, y + r * C);
          mean_out[r] = m.mean, rstd_out[r] = m.rstd;
          continue;
        }
      }
#endif
      const Acc* xr = row_as<Acc>(x + r * C, C, widened.data());
      const Acc mu = lane_sum<L, Acc>(C, [&](int64_t i) { return xr[i]; }) / Acc(C);
      const Acc var = lane_sum<L, Acc>(C,
                                       [&](int64_t i) {
                                         const Acc d = xr[i] - mu;
                                         return d * d;
                                       }) /
                      Acc(C);
      const Acc rs = Acc(1) / std::sqrt(var + Acc(a.eps));
      mean_out[r] = mu;
      rstd_out[r] = rs;
      T* yr = y + r * C;
      for (int64_t i = 0; i < C; ++i) yr[i] = narrow<T>((xr[i] - mu) * rs * w[i] + b[i]);
    }
  });
}

#if DEW_HAS_FLOAT_VEC
// One row of layer_norm_backward on FloatVec, in two passes over the row where the general body takes
// six (two widenings, two sums, dx, dx's narrowing, dw and db): the row stays in L1, so its cost is the
// operations, and loads widen bf16 and stores narrow it in registers. The same sums in the same order
// as lane_sum's kLanes partials (kVecWidth = kLanes; tail last), the same roundings per element.
template <class T>
inline void layer_norm_backward_row_vec(const T* x, const T* dy, const float* w, float mu, float rs,
                                        int64_t C, T* dx, float* dw, float* db) {
  static_assert(kVecWidth == kLanes, "the sums' partials are lane_sum's");
  const int64_t full = C - C % kVecWidth;
  const FloatVec mean(mu), rstd(rs);
  FloatVec part_g = 0.0f, part_gx = 0.0f;
  for (int64_t i = 0; i < full; i += kVecWidth) {
    const FloatVec g = load_vec(dy + i) * load_vec(w + i), xhat = (load_vec(x + i) - mean) * rstd;
    part_g += g;
    part_gx += g * xhat;
  }
  alignas(64) float lanes_g[kVecWidth], lanes_gx[kVecWidth];
  store_vec(lanes_g, part_g);
  store_vec(lanes_gx, part_gx);
  float sum_g = 0, sum_gx = 0;
  for (int l = 0; l < kVecWidth; ++l) sum_g += lanes_g[l], sum_gx += lanes_gx[l];
  for (int64_t i = full; i < C; ++i) {
    const float g = widen<float>(dy[i]) * w[i];
    sum_g += g;
    sum_gx += g * ((widen<float>(x[i]) - mu) * rs);
  }
  const FloatVec mean_g(sum_g / float(C)), mean_gx(sum_gx / float(C));
  const auto write = [&](int64_t i, int lanes) __attribute__((always_inline)) {
    const FloatVec dyv = load_vec(dy + i, lanes), xhat = (load_vec(x + i, lanes) - mean) * rstd;
    store_vec(dx + i, rstd * ((dyv * load_vec(w + i, lanes) - mean_g) - xhat * mean_gx), lanes);
    if (dw) {
      store_vec(dw + i, load_vec(dw + i, lanes) + dyv * xhat, lanes);
      store_vec(db + i, load_vec(db + i, lanes) + dyv, lanes);
    }
  };
  for (int64_t i = 0; i < full; i += kVecWidth) write(i, kVecWidth);
  if (full < C) write(full, int(C - full));
}
#endif

template <int L, class T>
void layer_norm_backward(const LayerNormArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  Tensor dyc = a.dy.contiguous(), xc = a.x.contiguous(), mc = a.mean.contiguous(), rc = a.rstd.contiguous();
  const T* dy = dyc.data<T>();
  const T* x = xc.data<T>();
  const Acc* mean = mc.data<Acc>();
  const Acc* rstd = rc.data<Acc>();
  T* dx = outs[0].data<T>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  const Scratch<Acc> w_values = channel_values<Acc, T>(a.weight, C, Acc(1));
  const Acc* w = w_values.data();
  const bool has_w = a.weight.defined();
  const int64_t blocks = (rows + kLayerNormBlockRows - 1) / kLayerNormBlockRows;
  Scratch<Acc> dw_blocks(has_w ? blocks * C : 0, Acc(0)), db_blocks(has_w ? blocks * C : 0, Acc(0));
  Acc *dw_parts = dw_blocks.data(), *db_parts = db_blocks.data();
  bool rows_on_vec = false;  // rows_on_float_vec: then no widening buffers
#if DEW_HAS_FLOAT_VEC
  if constexpr (std::is_same_v<Acc, float>) rows_on_vec = rows_on_float_vec<T>();
#endif
  const int64_t widened_C = rows_on_vec ? 0 : C;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    Scratch<Acc> x_widened = widening_buffer<Acc, T>(widened_C),
                 dy_widened = widening_buffer<Acc, T>(widened_C),
                 dx_wide =
                     widening_buffer<Acc, T>(widened_C);  // bf16 rows computed in Acc, narrowed as a row
    for (int64_t blk = b0; blk < b1; ++blk) {
      for (int64_t r = blk * kLayerNormBlockRows; r < std::min(rows, (blk + 1) * kLayerNormBlockRows); ++r) {
        T* dxr = dx + r * C;
        const Acc mu = mean[r], rs = rstd[r];
#if DEW_HAS_FLOAT_VEC
        if constexpr (std::is_same_v<Acc, float>) {
          if (rows_on_vec) {
            layer_norm_backward_row_vec(x + r * C, dy + r * C, w, mu, rs, C, dxr,
                                        has_w ? dw_parts + blk * C : nullptr,
                                        has_w ? db_parts + blk * C : nullptr);
            continue;
          }
        }
#endif
        const Acc* xr = row_as<Acc>(x + r * C, C, x_widened.data());
        const Acc* dyr = row_as<Acc>(dy + r * C, C, dy_widened.data());
        auto g = [&](int64_t i) { return dyr[i] * w[i]; };
        auto xhat = [&](int64_t i) { return (xr[i] - mu) * rs; };
        const Acc mean_g = lane_sum<L, Acc>(C, g) / Acc(C);
        const Acc mean_gx = lane_sum<L, Acc>(C, [&](int64_t i) { return g(i) * xhat(i); }) / Acc(C);
        if constexpr (std::is_same_v<T, Acc>) {
          for (int64_t i = 0; i < C; ++i) dxr[i] = rs * (g(i) - mean_g - xhat(i) * mean_gx);
        } else {  // natively where the CPU can (NOTE [native bf16 narrowing])
          Acc* d = dx_wide.data();
          for (int64_t i = 0; i < C; ++i) d[i] = rs * (g(i) - mean_g - xhat(i) * mean_gx);
          narrow_row(d, dxr, C);
        }
        if (has_w) {
          Acc* dwb = dw_parts + blk * C;
          Acc* dbb = db_parts + blk * C;
          for (int64_t i = 0; i < C; ++i) {
            dwb[i] += dyr[i] * xhat(i);
            dbb[i] += dyr[i];
          }
        }
      }
    }
  });
  if (!has_w) return;
  T* dw = outs[1].data<T>();
  T* db = outs[2].data<T>();
  Scratch<Acc> sums(C);
  sum_block_partials(dw_parts, blocks, C, sums.data(), dw);
  sum_block_partials(db_parts, blocks, C, sums.data(), db);
}

template <int L, class T>
void layer_norm(const LayerNormArgs& a, std::vector<Tensor>& outs) {
  if (a.backward)
    layer_norm_backward<L, T>(a, outs);
  else
    layer_norm_forward<L, T>(a, outs);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
