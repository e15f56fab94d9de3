// modulate's and gated_add's kernel, written once and compiled per instruction set (NOTE [kernel
// namespaces]): one (b, t) row of C channels per step in a plain loop the compiler vectorizes.
#pragma once

#include <dew/runtime.h>

#include "ops/kernel_types.h"
#include "ops/modulate/modulate.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

template <class T>
void modulate_rows(const ModulateArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const bool mod = a.fn == ModulateFn::modulate;
  const Tensor xc = a.x.contiguous(), vc = a.a.contiguous(), wc = mod ? a.b.contiguous() : a.y.contiguous();
  const T *x = xc.data<T>(), *v = vc.data<T>(), *w = wc.data<T>();
  T* y = out.data<T>();
  const int64_t tokens = a.x.size(1), C = a.x.size(2);
  parallel_for(a.x.size(0) * tokens, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, C)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   const T *xr = x + r * C, *vr = v + (r / tokens) * C;
                   T* yr = y + r * C;
                   if (mod) {
                     const T* sr = w + (r / tokens) * C;
                     for (int64_t c = 0; c < C; ++c)
                       yr[c] =
                           narrow<T>(widen<Acc>(xr[c]) * (Acc(1) + widen<Acc>(sr[c])) + widen<Acc>(vr[c]));
                   } else {
                     const T* wr = w + r * C;
                     for (int64_t c = 0; c < C; ++c)
                       yr[c] = narrow<T>(widen<Acc>(xr[c]) + widen<Acc>(vr[c]) * widen<Acc>(wr[c]));
                   }
                 }
               });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
