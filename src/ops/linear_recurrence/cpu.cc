// linear_recurrence token by token on each CPU tier (cpu.<tier>; NOTE [instruction-set regions]): the
// fused decode step (one token: the state decayed, updated and read in one pass, vectorized over its
// rows), and the backward and tangent sweeps, with kLanes partial lanes per row sum (kernels.h).
#include "ops/cpu_tier.h"
#include "ops/linear_recurrence/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_linear_recurrence_token_by_token(select::Registry<LinearRecurrenceArgs>& r) {
  add_cpu_f32_bf16<LinearRecurrenceArgs, true>(
      r, [](auto t, const LinearRecurrenceArgs& a, std::vector<Tensor>& outs) {
        forward<kLanes, decltype(t)>(a, outs);
      });
}

void add_linear_recurrence_backward_cpu(select::Registry<LinearRecurrenceBackwardArgs>& r) {
  add_cpu_f32_bf16<LinearRecurrenceBackwardArgs, true>(
      r, [](auto t, const LinearRecurrenceBackwardArgs& a, std::vector<Tensor>& outs) {
        backward<kLanes, decltype(t)>(a, outs);
      });
}

void add_linear_recurrence_jvp_cpu(select::Registry<LinearRecurrenceJvpArgs>& r) {
  add_cpu_f32_bf16<LinearRecurrenceJvpArgs, true>(
      r, [](auto t, const LinearRecurrenceJvpArgs& a, std::vector<Tensor>& outs) {
        tangent<kLanes, decltype(t)>(a, outs);
      });
}

}  // namespace dew::ops::DEW_KERNEL_NS
