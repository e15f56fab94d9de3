// Unary ops for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE [instruction-set
// regions]): f32 and bf16; exp, sigmoid, silu and tanh-GELU through exp_f32, and the functions
// without a libm call; log, tanh and erf-GELU are left to the portable implementation.
#include "ops/cpu_tier.h"
#include "ops/unary/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_unary_cpu(select::Registry<UnaryArgs>& r) {
  add_cpu_f32_bf16<UnaryArgs>(
      r,
      [](auto t, const UnaryArgs& a, std::vector<Tensor>& outs) {
        unary_rows<true, decltype(t)>(a, outs[0]);
      },
      {select::requires_that<UnaryArgs>(
          "fn is not log, tanh or gelu (libm calls)", [](const UnaryArgs& a) { return has_fast_form(a.fn); },
          [](const UnaryArgs& a) { return fmt::format("fn is {}", unary_name(a.fn)); })});
}

}  // namespace dew::ops::DEW_KERNEL_NS
