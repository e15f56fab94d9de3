// softmax and log_softmax for AVX2+FMA CPUs: f32 and bf16, eight lanes, exp_f32 (cumsum, a serial
// prefix, stays portable).
#define DEW_KERNEL_NS avx2
#include "ops/softmax/kernels.h"

namespace dew::ops {

void add_along_axis_avx2(select::Registry<AlongAxisArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<AlongAxisArgs>(), select::cpu_has_avx2<AlongAxisArgs>(),
          select::dtype_in<AlongAxisArgs>({DType::f32, DType::bf16}),
          select::requires_that<AlongAxisArgs>(
              "fn in {softmax, log_softmax}",
              [](const AlongAxisArgs& a) { return a.fn != AlongAxisFn::cumsum; },
              [](const AlongAxisArgs&) { return std::string("fn is cumsum"); })},
         [](const AlongAxisArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::along_axis<8, true, float>(a, outs[0]);
           else
             avx2::along_axis<8, true, bf16>(a, outs[0]);
         }});
}

}  // namespace dew::ops
