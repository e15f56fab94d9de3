// rope for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE [instruction-set regions]):
// f32, bf16 and f16.
#include "ops/cpu_tier.h"
#include "ops/rope/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_rope_cpu(select::Registry<RopeArgs>& r) {
  add_cpu_f32_bf16<RopeArgs, true>(r, [](auto t, const RopeArgs& a, std::vector<Tensor>& outs) {
    rope_rows<decltype(t), float>(a, outs[0]);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
