// attention, its backward and its jvp, per-key kernels (cpu.avx2, cpu.avx512: this file is built once per
// instruction-set tier, NOTE [instruction-set regions]): f32 and bf16, kLanes lanes, exp_f32.
#include "ops/attention/kernels.h"
#include "ops/cpu_tier.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_attention_cpu(select::Registry<AttentionArgs>& r) {
  add_cpu_f32_bf16<AttentionArgs>(r, [](auto t, const AttentionArgs& a, std::vector<Tensor>& outs) {
    attention_forward<kLanes, true, decltype(t)>(a, outs);
  });
}

void add_attention_backward_cpu(select::Registry<AttentionBackwardArgs>& r) {
  add_cpu_f32_bf16<AttentionBackwardArgs>(
      r, [](auto t, const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
        attention_backward<kLanes, true, decltype(t)>(a, outs);
      });
}

void add_attention_jvp_cpu(select::Registry<AttentionJvpArgs>& r) {
  add_cpu_f32_bf16<AttentionJvpArgs>(r, [](auto t, const AttentionJvpArgs& a, std::vector<Tensor>& outs) {
    attention_jvp<kLanes, true, decltype(t)>(a, outs);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
