// cross_entropy for AVX2+FMA CPUs: f32 and bf16 logits, eight lanes, the vectorized exp_f32.
#define DEW_KERNEL_NS avx2
#include "ops/cross_entropy/kernels.h"

namespace dew::ops {

void add_cross_entropy_avx2(select::Registry<CrossEntropyArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<CrossEntropyArgs>(), select::cpu_has_avx2<CrossEntropyArgs>(),
          select::dtype_in<CrossEntropyArgs>({DType::f32, DType::bf16})},
         [](const CrossEntropyArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::cross_entropy_rows<8, true, float>(a, outs);
           else
             avx2::cross_entropy_rows<8, true, bf16>(a, outs);
         }});
}

}  // namespace dew::ops
