// Binary ops for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE [instruction-set
// regions]): f32, bf16 and f16, every function (pow: src/ops/binary/pow.h).
#include "ops/binary/kernels.h"
#include "ops/cpu_tier.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_binary_cpu(select::Registry<BinaryArgs>& r) {
  add_cpu_f32_bf16<BinaryArgs, true>(r, [](auto t, const BinaryArgs& a, std::vector<Tensor>& outs) {
    binary_rows<decltype(t)>(a, outs[0]);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
