// Unary ops for AVX2+FMA CPUs: f32 and bf16; exp, sigmoid, silu and tanh-GELU through exp_f32, the
// others (and every erf/log/tanh) left to the portable implementation.
#define DEW_KERNEL_NS avx2
#include "ops/unary/kernels.h"

namespace dew::ops {

void add_unary_avx2(select::Registry<UnaryArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<UnaryArgs>(), select::cpu_has_avx2<UnaryArgs>(),
          select::dtype_in<UnaryArgs>({DType::f32, DType::bf16}),
          select::requires_that<UnaryArgs>(
              "fn in {exp, sigmoid, silu, gelu_tanh}",
              [](const UnaryArgs& a) { return avx2::has_fast_form(a.fn); },
              [](const UnaryArgs& a) { return fmt::format("fn is {}", unary_name(a.fn)); })},
         [](const UnaryArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::unary_rows<true, float>(a, outs[0]);
           else
             avx2::unary_rows<true, bf16>(a, outs[0]);
         }});
}

}  // namespace dew::ops
