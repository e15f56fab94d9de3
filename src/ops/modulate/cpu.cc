// modulate and gated_add for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE
// [instruction-set regions]): f32, bf16 and f16.
#include "ops/cpu_tier.h"
#include "ops/modulate/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_modulate_cpu(select::Registry<ModulateArgs>& r) {
  add_cpu_f32_bf16<ModulateArgs, true>(r, [](auto t, const ModulateArgs& a, std::vector<Tensor>& outs) {
    modulate_rows<decltype(t)>(a, outs[0]);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
