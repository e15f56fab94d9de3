// Unary ops for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE [instruction-set
// regions]): every unary function on f32, on bf16 and f16 those cpu.table does not take (NOTE [unary
// maps by table]) and, on avx512, the cheap ones it does (NOTE [cheap functions on AVX-512 vectors]);
// vectorized exp, tanh, log and erf-GELU (vector_math.h) where the portable implementation calls libm.
#include "ops/cpu_tier.h"
#include "ops/unary/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

// NOTE [cheap functions on AVX-512 vectors]: the avx512 tier computes a few of cpu.table's functions.
inline constexpr bool kTakesTabledFunctions = kLanes == 16;

void add_unary_cpu(select::Registry<UnaryArgs>& r) {
  add_cpu_f32_bf16<UnaryArgs, true>(
      r,
      [](auto t, const UnaryArgs& a, std::vector<Tensor>& outs) {
        unary_rows<true, decltype(t)>(a, outs[0]);
      },
      {select::requires_that<UnaryArgs>(
          kTakesTabledFunctions
              ? std::string("f32, or bf16 or f16 for a function cpu.table does not take, or ") +
                    kUnaryComputedOnAvx512
              : std::string("f32, or bf16 or f16 for a function cpu.table does not take"),
          [](const UnaryArgs& a) {
            return !unary_by_table(a.fn, a.dtype()) ||
                   (kTakesTabledFunctions && unary_computed_on_avx512(a.fn, a.dtype()));
          },
          [](const UnaryArgs& a) {
            return fmt::format("{} on {} is cpu.table's", unary_name(a.fn), dtype_name(a.dtype()));
          })});
}

}  // namespace dew::ops::DEW_KERNEL_NS
