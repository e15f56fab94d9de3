// Binary ops for AVX2+FMA CPUs: f32 and bf16, every function but pow (libm's, scalar).
#define DEW_KERNEL_NS avx2
#include "ops/binary/kernels.h"

namespace dew::ops {

void add_binary_avx2(select::Registry<BinaryArgs>& r) {
  r.add({"cpu.avx2",
         {select::on_cpu<BinaryArgs>(), select::cpu_has_avx2<BinaryArgs>(),
          select::dtype_in<BinaryArgs>({DType::f32, DType::bf16}),
          select::requires_that<BinaryArgs>(
              "fn is not pow", [](const BinaryArgs& a) { return a.fn != BinaryFn::pow; },
              [](const BinaryArgs&) { return std::string("fn is pow"); })},
         [](const BinaryArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             avx2::binary_rows<float>(a, outs[0]);
           else
             avx2::binary_rows<bf16>(a, outs[0]);
         }});
}

}  // namespace dew::ops
