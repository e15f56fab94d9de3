// Gated units for AVX2+FMA CPUs: f32 and bf16.
#define DEW_KERNEL_NS avx2
#include "ops/glu/kernels.h"

namespace dew::ops {

void add_glu_avx2(select::Registry<GluArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<GluArgs>(), select::cpu_has_avx2<GluArgs>(),
          select::dtype_in<GluArgs>({DType::f32, DType::bf16})},
         [](const GluArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::glu<true, float>(a, outs);
           else
             avx2::glu<true, bf16>(a, outs);
         }});
}

}  // namespace dew::ops
