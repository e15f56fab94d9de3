// attention and its backward for AVX2+FMA CPUs: f32 and bf16, eight lanes, the vectorized exp_f32.
#define DEW_KERNEL_NS avx2
#include "ops/attention/kernels.h"

namespace dew::ops {

void add_attention_avx2(select::Registry<AttentionArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<AttentionArgs>(), select::cpu_has_avx2<AttentionArgs>(),
          select::dtype_in<AttentionArgs>({DType::f32, DType::bf16})},
         [](const AttentionArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::attention_forward<8, true, float>(a, outs);
           else
             avx2::attention_forward<8, true, bf16>(a, outs);
         }});
}

void add_attention_backward_avx2(select::Registry<AttentionBackwardArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<AttentionBackwardArgs>(), select::cpu_has_avx2<AttentionBackwardArgs>(),
          select::dtype_in<AttentionBackwardArgs>({DType::f32, DType::bf16})},
         [](const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::attention_backward<8, true, float>(a, outs);
           else
             avx2::attention_backward<8, true, bf16>(a, outs);
         }});
}

}  // namespace dew::ops
