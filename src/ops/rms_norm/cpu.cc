// rms_norm and its backward for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE
// [instruction-set regions]): f32, bf16 and f16, kLanes lanes per reduction.
#include "ops/cpu_tier.h"
#include "ops/rms_norm/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_rms_norm_cpu(select::Registry<RmsNormArgs>& r) {
  add_cpu_f32_bf16<RmsNormArgs, true>(r, [](auto t, const RmsNormArgs& a, std::vector<Tensor>& outs) {
    rms_norm_forward<kLanes, decltype(t), float>(a, outs[0], outs[1]);
  });
}

void add_rms_norm_backward_cpu(select::Registry<RmsNormBackwardArgs>& r) {
  add_cpu_f32_bf16<RmsNormBackwardArgs, true>(
      r, [](auto t, const RmsNormBackwardArgs& a, std::vector<Tensor>& outs) {
        rms_norm_backward<kLanes, decltype(t), float>(a, outs);
      });
}

}  // namespace dew::ops::DEW_KERNEL_NS
