// rope's kernel, written once and compiled per instruction set (NOTE [kernel namespaces]): one (b, t)
// row of H heads per step, the rotation's pairs in a plain loop the compiler vectorizes.
#pragma once

#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/rope/rope.h"

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
  Tensor xc = a.x.contiguous(), pc = a.positions.contiguous(), cc = a.cos.contiguous(),
         sc = a.sin.contiguous();
  const T* x = xc.data<T>();
  const int64_t* pos = pc.data<int64_t>();
  const Tab* cos = cc.data<Tab>();
  const Tab* sin = sc.data<Tab>();
  T* y = out.data<T>();
  const int64_t BT = a.x.size(0) * a.x.size(1), H = a.x.size(2), D = a.x.size(3), half = a.cos.size(1);
  const bool interleaved = a.layout == RopeLayout::interleaved;
  parallel_for(BT, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, H * D)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const Tab* c = cos + pos[r] * half;
      const Tab* s = sin + pos[r] * half;
      for (int64_t h = 0; h < H; ++h) {
        const T* xr = x + (r * H + h) * D;
        T* yr = y + (r * H + h) * D;
        // The pairs (i, i + half) or (2i, 2i + 1), as two loops with constant strides so both vectorize.
        if (interleaved)
          for (int64_t i = 0; i < half; ++i)
            rotate_pair<Acc>(xr + 2 * i, xr + 2 * i + 1, c[i], s[i], yr + 2 * i, yr + 2 * i + 1);
        else
          for (int64_t i = 0; i < half; ++i)
            rotate_pair<Acc>(xr + i, xr + i + half, c[i], s[i], yr + i, yr + i + half);
        for (int64_t d = 2 * half; d < D; ++d) yr[d] = xr[d];  // dims past R pass through
      }
    }
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
