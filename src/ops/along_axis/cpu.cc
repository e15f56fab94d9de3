// softmax, log_softmax and cumsum for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE
// [instruction-set regions]): f32, bf16 and f16, on FloatVec (kLanes lanes where a CPU's vectors cannot
// narrow bf16), exp_f32; cumsum a vector of prefix sums at a time.
#include "ops/along_axis/kernels.h"
#include "ops/cpu_tier.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_along_axis_cpu(select::Registry<AlongAxisArgs>& r) {
  add_cpu_f32_bf16<AlongAxisArgs, true>(r, [](auto t, const AlongAxisArgs& a, std::vector<Tensor>& outs) {
    along_axis<kLanes, true, decltype(t)>(a, outs[0]);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
