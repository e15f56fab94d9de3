// paged_attention per instruction-set tier (cpu.avx2, cpu.avx512; NOTE [instruction-set regions]): f32
// and bf16 caches, kLanes lanes, exp_f32.
#include "ops/attention/paged_kernels.h"
#include "ops/cpu_tier.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_paged_attention_cpu(select::Registry<PagedAttentionArgs>& r) {
  add_cpu_f32_bf16<PagedAttentionArgs>(r, [](auto t, const PagedAttentionArgs& a, std::vector<Tensor>& outs) {
    paged_attention_forward<kLanes, true, decltype(t)>(a, outs);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
