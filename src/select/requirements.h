// Requirement values shared by every operation. Each has a fixed text (what the support matrix
// prints), a check, and the reason a call that does not meet it is given. An op's Args provide
// dtype(), device() and inputs() (the tensors it reads).
#pragma once

#include <dew/runtime.h>

#include <algorithm>

#include "cuda/runtime.h"
#include "select/registry.h"

namespace dew::select {

template <class Args>
Requirement<Args> dtype_in(std::vector<DType> allowed) {
  std::vector<std::string> names;
  for (DType t : allowed) names.emplace_back(dtype_name(t));
  return {fmt::format("dtype in {{{}}}", fmt::join(names, ", ")),
          [allowed](const Args& a) {
            return std::find(allowed.begin(), allowed.end(), a.dtype()) != allowed.end();
          },
          [](const Args& a) { return fmt::format("dtype is {}", dtype_name(a.dtype())); }, allowed};
}

template <class Args>
Requirement<Args> on_cpu() {
  return {"device cpu", [](const Args& a) { return a.device().kind == Device::Kind::cpu; },
          [](const Args& a) { return fmt::format("device is {}", a.device().str()); }};
}

// A CUDA device of compute capability at least min_sm (80: Ampere; 90: Hopper).
template <class Args>
Requirement<Args> on_cuda(int min_sm = 80) {
  return {fmt::format("device(cuda, sm >= {})", min_sm),
          [min_sm](const Args& a) {
            const Device d = a.device();
            return d.kind == Device::Kind::cuda && cuda::properties(d.index).sm >= min_sm;
          },
          [](const Args& a) {
            const Device d = a.device();
            if (d.kind != Device::Kind::cuda) return fmt::format("device is {}", d.str());
            return fmt::format("{} is sm_{}", d.str(), cuda::properties(d.index).sm);
          }};
}

// The instruction-set tiers kernels are built for (NOTE [instruction-set regions], src/simd/isa.h).
enum class Isa { avx2, avx512 };

inline bool cpu_supports(Isa isa) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;  // the avx2 tier converts f16 with F16C
  if (isa == Isa::avx2) return avx2;
  return avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
}

template <class Args>
Requirement<Args> cpu_has(Isa isa) {
  const bool avx2 = isa == Isa::avx2;
  return {
      avx2 ? "cpu_has(avx2, fma, f16c)" : "cpu_has(avx512f, avx512bw, avx512vl, avx512dq)",
      [isa](const Args&) { return cpu_supports(isa); },
      [avx2](const Args&) {
        return std::string(avx2 ? "this CPU lacks AVX2/FMA/F16C" : "this CPU lacks AVX-512 (F, BW, VL, DQ)");
      }};
}

template <class Args>
Requirement<Args> contiguous_inputs() {
  return {"contiguous inputs",
          [](const Args& a) {
            for (const Tensor* t : a.inputs())
              if (!t->is_contiguous()) return false;
            return true;
          },
          [](const Args& a) {
            for (const Tensor* t : a.inputs())
              if (!t->is_contiguous()) return fmt::format("input {} is strided", t->describe());
            return std::string();
          }};
}

// An op-specific requirement from a predicate and a description of the call that fails it.
template <class Args, class Pred, class Why>
Requirement<Args> requires_that(std::string text, Pred pred, Why why) {
  return {std::move(text), [pred](const Args& a) -> bool { return pred(a); },
          [why](const Args& a) -> std::string { return why(a); }};
}

}  // namespace dew::select
