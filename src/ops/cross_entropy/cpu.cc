// cross_entropy for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE [instruction-set
// regions]): f32, bf16 and f16 logits, kLanes lanes, exp_f32.
#include "ops/cpu_tier.h"
#include "ops/cross_entropy/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_cross_entropy_cpu(select::Registry<CrossEntropyArgs>& r) {
  add_cpu_f32_bf16<CrossEntropyArgs, true>(r,
                                           [](auto t, const CrossEntropyArgs& a, std::vector<Tensor>& outs) {
                                             cross_entropy_rows<kLanes, true, decltype(t)>(a, outs);
                                           });
}

}  // namespace dew::ops::DEW_KERNEL_NS
