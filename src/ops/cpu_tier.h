// What a cpu.cc registers as, for the instruction-set tier it is being built for (CMake's
// dew_cpu_tiers defines DEW_KERNEL_NS as avx2 or avx512): the implementation name cpu.<tier> and
// the cpu_has requirement the selector checks before any of the tier's code runs.
#pragma once

#include "select/requirements.h"
#include "simd/isa.h"

namespace dew::ops::DEW_KERNEL_NS {

inline constexpr const char* kCpuImplName = "cpu." DEW_ISA_STR(DEW_KERNEL_NS);

template <class Args>
select::Requirement<Args> cpu_has_tier() {
  return select::cpu_has<Args>(select::Isa::DEW_KERNEL_NS);
}

// Registers this tier's kernel for f32 and bf16 data on the CPU, behind any further requirements:
// run(T{}, args, outputs) with T = float or bf16, and f16 too with AlsoF16 (kernels written over T,
// whose FloatVec rows load and store f16 with vcvtph2ps and vcvtps2ph; the matmul and attention
// kernels, whose products go through bf16 or f32 paths, do not). Named cpu.<tier>, or
// cpu.<tier>.<algorithm>.
template <class Args, bool AlsoF16 = false, class Run>
void add_cpu_f32_bf16(select::Registry<Args>& r, Run run, std::vector<select::Requirement<Args>> more = {},
                      std::string_view algorithm = {}) {
  std::vector<DType> dtypes{DType::f32, DType::bf16};
  if (AlsoF16) dtypes.push_back(DType::f16);
  std::vector<select::Requirement<Args>> reqs{select::on_cpu<Args>(), cpu_has_tier<Args>(),
                                              select::dtype_in<Args>(dtypes)};
  reqs.insert(reqs.end(), more.begin(), more.end());
  std::string name(kCpuImplName);
  if (!algorithm.empty()) name.append(".").append(algorithm);
  r.add({std::move(name), std::move(reqs), [run](const Args& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             run(float{}, a, outs);
           else if constexpr (AlsoF16)
             a.dtype() == DType::bf16 ? run(bf16{}, a, outs) : run(f16{}, a, outs);
           else
             run(bf16{}, a, outs);
         }});
}

}  // namespace dew::ops::DEW_KERNEL_NS
