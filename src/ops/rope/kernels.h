// rope's kernel, written once and compiled per instruction set (NOTE [kernel namespaces]): one (b, t)
// row of H heads per step, the rotation's pairs in a plain loop the compiler vectorizes.
#pragma once

#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/rope/rope.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

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
        const int64_t lo_step = interleaved ? 2 : 1, hi_offset = interleaved ? 1 : half;
        for (int64_t i = 0; i < half; ++i) {
          const Acc xa = widen<Acc>(xr[i * lo_step]), xb = widen<Acc>(xr[i * lo_step + hi_offset]);
          const Acc ci = Acc(c[i]), si = Acc(s[i]);
          yr[i * lo_step] = narrow<T>(xa * ci - xb * si);
          yr[i * lo_step + hi_offset] = narrow<T>(xb * ci + xa * si);
        }
        for (int64_t d = 2 * half; d < D; ++d) yr[d] = xr[d];  // dims past R pass through
      }
    }
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
