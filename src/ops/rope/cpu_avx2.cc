// rope for AVX2+FMA CPUs: f32 and bf16.
#define DEW_KERNEL_NS avx2
#include "ops/rope/kernels.h"

namespace dew::ops {

void add_rope_avx2(select::Registry<RopeArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<RopeArgs>(), select::cpu_has_avx2<RopeArgs>(),
          select::dtype_in<RopeArgs>({DType::f32, DType::bf16})},
         [](const RopeArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::rope_rows<float, float>(a, outs[0]);
           else
             avx2::rope_rows<bf16, float>(a, outs[0]);
         }});
}

}  // namespace dew::ops
