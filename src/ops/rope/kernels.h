// rope's kernel, written once and compiled per instruction set (NOTE [kernel namespaces]): one (b, t)
// row of H heads per step, the rotation's pairs in a plain loop the compiler vectorizes (f16 rows
// widened into float first where the tier's vectors convert them).
#pragma once

#include "ops/kernel_types.h"
#include "ops/rope/rope.h"
#include "ops/rows.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// (a, b) rotated by the angle whose cosine and sine are c and s.
template <class Acc, class T, class Tab>
inline void rotate_pair(const T* a, const T* b, Tab c, Tab s, T* ya, T* yb) {
  const Acc xa = widen<Acc>(*a), xb = widen<Acc>(*b), ci = Acc(c), si = Acc(s);
  *ya = narrow<T>(xa * ci - xb * si);
  *yb = narrow<T>(xb * ci + xa * si);
}

template <class T, class Tab>
void rope_rows(const RopeArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t BT = a.x.size(0) * a.x.size(1), H = a.x.size(2), D = a.x.size(3), half = a.cos.size(1);
  // x's (b, t) rows where they lie when they are contiguous rows a stride apart (NOTE [rows read in place]).
  const int64_t stride = a.x.is_contiguous() ? H * D : row_stride(a.x, 2);
  const int64_t x_row = stride > 0 ? stride : H * D;
  Tensor xc = stride > 0 ? a.x : a.x.contiguous(), pc = a.positions.contiguous(), cc = a.cos.contiguous(),
         sc = a.sin.contiguous();
  const T* x = xc.data<T>();
  const int64_t* pos = pc.data<int64_t>();
  const Tab* cos = cc.data<Tab>();
  const Tab* sin = sc.data<Tab>();
  T* y = out.data<T>();
  const bool interleaved = a.layout == RopeLayout::interleaved;
  // The H heads of one (b, t) row from xr to yr, elements of T or (widened) float.
  const auto rotate_heads = [&](const auto* xr, auto* yr, const Tab* c, const Tab* s) {
    for (int64_t h = 0; h < H; ++h) {
      const auto* xh = xr + h * D;
      auto* yh = yr + h * D;
      // The pairs (i, i + half) or (2i, 2i + 1), as two loops with constant strides so both vectorize.
      if (interleaved)
        for (int64_t i = 0; i < half; ++i)
          rotate_pair<Acc>(xh + 2 * i, xh + 2 * i + 1, c[i], s[i], yh + 2 * i, yh + 2 * i + 1);
      else
        for (int64_t i = 0; i < half; ++i)
          rotate_pair<Acc>(xh + i, xh + i + half, c[i], s[i], yh + i, yh + i + half);
      for (int64_t d = 2 * half; d < D; ++d) yh[d] = xh[d];  // dims past R pass through
    }
  };
  // f16 rows widened into float by the tier's vectors and narrowed back: dtype.h's f16 conversions cost
  // the scalar loops about 25 instructions a vector (bf16's a few, so bf16 rows stay as they are).
  bool rows_in_float = false;
#if DEW_HAS_FLOAT_VEC
  if constexpr (std::is_same_v<T, f16>) rows_in_float = rows_on_float_vec<T>();
#endif
  parallel_for(BT, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, H * D)), [&](int64_t r0, int64_t r1) {
    Scratch<float> row(rows_in_float ? H * D : 0);  // rotated in place: each pair is read before written
    for (int64_t r = r0; r < r1; ++r) {
      const Tab* c = cos + pos[r] * half;
      const Tab* s = sin + pos[r] * half;
#if DEW_HAS_FLOAT_VEC
      if constexpr (std::is_same_v<T, f16>) {
        if (rows_in_float) {
          convert_row_vec(x + r * x_row, row.data(), H * D);
          rotate_heads(static_cast<const float*>(row.data()), row.data(), c, s);
          convert_row_vec(static_cast<const float*>(row.data()), y + r * H * D, H * D);
          continue;
        }
      }
#endif
      rotate_heads(x + r * x_row, y + r * H * D, c, s);
    }
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
