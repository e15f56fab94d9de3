// group_norm and group_norm_backward for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE
// [instruction-set regions]): f32, bf16 and f16, kLanes lanes per reduction.
#include "ops/cpu_tier.h"
#include "ops/group_norm/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_group_norm_cpu(select::Registry<GroupNormArgs>& r) {
  add_cpu_f32_bf16<GroupNormArgs, true>(r, [](auto t, const GroupNormArgs& a, std::vector<Tensor>& outs) {
    group_norm_rows<kLanes, decltype(t)>(a, outs);
  });
}

void add_group_norm_backward_cpu(select::Registry<GroupNormBackwardArgs>& r) {
  add_cpu_f32_bf16<GroupNormBackwardArgs, true>(
      r, [](auto t, const GroupNormBackwardArgs& a, std::vector<Tensor>& outs) {
        group_norm_backward_rows<kLanes, decltype(t)>(a, outs);
      });
}

}  // namespace dew::ops::DEW_KERNEL_NS
