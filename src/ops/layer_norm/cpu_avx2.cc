// layer_norm and its backward for AVX2+FMA CPUs: f32 and bf16, eight lanes per reduction.
#define DEW_KERNEL_NS avx2
#include "ops/layer_norm/kernels.h"

namespace dew::ops {

void add_layer_norm_avx2(select::Registry<LayerNormArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<LayerNormArgs>(), select::cpu_has_avx2<LayerNormArgs>(),
          select::dtype_in<LayerNormArgs>({DType::f32, DType::bf16})},
         [](const LayerNormArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::layer_norm<8, float>(a, outs);
           else
             avx2::layer_norm<8, bf16>(a, outs);
         }});
}

}  // namespace dew::ops
