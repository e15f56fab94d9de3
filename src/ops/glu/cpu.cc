// Gated units for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE [instruction-set
// regions]): f32, bf16 and f16.
#include "ops/cpu_tier.h"
#include "ops/glu/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_glu_cpu(select::Registry<GluArgs>& r) {
  add_cpu_f32_bf16<GluArgs, true>(
      r, [](auto t, const GluArgs& a, std::vector<Tensor>& outs) { glu<true, decltype(t)>(a, outs); });
}

}  // namespace dew::ops::DEW_KERNEL_NS
