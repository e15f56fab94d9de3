// softmax and log_softmax for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE
// [instruction-set regions]): f32 and bf16, kLanes lanes, exp_f32 (cumsum, a serial prefix, stays portable).
#include "ops/cpu_tier.h"
#include "ops/softmax/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_along_axis_cpu(select::Registry<AlongAxisArgs>& r) {
  add_cpu_f32_bf16<AlongAxisArgs>(
      r,
      [](auto t, const AlongAxisArgs& a, std::vector<Tensor>& outs) {
        along_axis<kLanes, true, decltype(t)>(a, outs[0]);
      },
      {select::requires_that<AlongAxisArgs>(
          "fn in {softmax, log_softmax}", [](const AlongAxisArgs& a) { return a.fn != AlongAxisFn::cumsum; },
          [](const AlongAxisArgs&) { return std::string("fn is cumsum"); })});
}

}  // namespace dew::ops::DEW_KERNEL_NS
