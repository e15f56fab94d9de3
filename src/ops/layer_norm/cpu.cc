// layer_norm and its backward for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE
// [instruction-set regions]): f32, bf16 and f16, kLanes lanes per reduction.
#include "ops/cpu_tier.h"
#include "ops/layer_norm/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_layer_norm_cpu(select::Registry<LayerNormArgs>& r) {
  add_cpu_f32_bf16<LayerNormArgs, true>(r, [](auto t, const LayerNormArgs& a, std::vector<Tensor>& outs) {
    layer_norm<kLanes, decltype(t)>(a, outs);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
