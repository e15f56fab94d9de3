// rms_norm and its backward for AVX2+FMA CPUs: f32 and bf16, eight lanes per reduction.
#define DEW_KERNEL_NS avx2
#include "ops/rms_norm/kernels.h"

namespace dew::ops {

void add_rms_norm_avx2(select::Registry<RmsNormArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<RmsNormArgs>(), select::cpu_has_avx2<RmsNormArgs>(),
          select::dtype_in<RmsNormArgs>({DType::f32, DType::bf16})},
         [](const RmsNormArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::rms_norm_forward<8, float, float>(a, outs[0], outs[1]);
           else
             avx2::rms_norm_forward<8, bf16, float>(a, outs[0], outs[1]);
         }});
}

void add_rms_norm_backward_avx2(select::Registry<RmsNormBackwardArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<RmsNormBackwardArgs>(), select::cpu_has_avx2<RmsNormBackwardArgs>(),
          select::dtype_in<RmsNormBackwardArgs>({DType::f32, DType::bf16})},
         [](const RmsNormBackwardArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::rms_norm_backward<8, float, float>(a, outs);
           else
             avx2::rms_norm_backward<8, bf16, float>(a, outs);
         }});
}

}  // namespace dew::ops
