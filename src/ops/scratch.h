// Scratch<T>, a kernel's temporary buffer from Dew's caching allocator, and the helpers that widen
// bf16/f16 data into one. Included inside a DEW_KERNEL_NS namespace (NOTE [kernel namespaces]).
#pragma once

#include <dew/runtime.h>
#include <dew/tensor.h>

#include <algorithm>
#include <type_traits>

#include "ops/kernel_types.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// A buffer from Dew's caching allocator: a fresh std::vector of many megabytes pays a page fault per
// 4 KB on every call (first touch costs several times a warm block); these come back warm.
// The pointer and size are kept: kernels index scratch in inner loops, and Tensor::data is a call.
template <class Acc>
class Scratch {
 public:
  Scratch() = default;
  // An empty buffer takes nothing from the allocator: kernels ask for one per row range even when
  // they need none, and the allocator's lock taken from two threads at once costs a futex call.
  explicit Scratch(int64_t n) : Scratch(n == 0 ? Tensor() : Tensor::empty({n}, Scalar<Acc>::dtype)) {}
  Scratch(int64_t n, Acc value) : Scratch(n) { std::fill(p_, p_ + n_, value); }
  // The values of t (contiguous, of dtype Acc) without a copy; kernels only read such a view.
  explicit Scratch(Tensor t)
      : t_(std::move(t)),
        p_(t_.defined() ? t_.data<Acc>() : nullptr),
        n_(t_.defined() ? size_t(t_.numel()) : 0) {}
  Acc* data() { return p_; }
  const Acc* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Acc& operator[](size_t i) { return p_[i]; }
  const Acc& operator[](size_t i) const { return p_[i]; }

 private:
  Tensor t_;
  Acc* p_ = nullptr;
  size_t n_ = 0;
};

// A row of C values of T as Acc: the row itself when T is Acc, otherwise widened into buf. Kernels
// widen a bf16 row once so that their passes over it vectorize (a widening load inside a lane_sum's
// lambda does not).
template <class Acc, class T>
inline const Acc* row_as(const T* row, int64_t C, Acc* buf) {
  if constexpr (std::is_same_v<T, Acc>) {
    return row;
  } else {
    for (int64_t i = 0; i < C; ++i) buf[i] = widen<Acc>(row[i]);
    return buf;
  }
}

// The buffer row_as needs: C values when T must be widened, none when T is Acc.
template <class Acc, class T>
Scratch<Acc> widening_buffer(int64_t C) {
  return Scratch<Acc>(std::is_same_v<T, Acc> ? 0 : C);
}

// The tensor as Acc values, contiguous: bf16/f16 widened once (instead of in every inner product);
// contiguous Acc data is used as it is, without a copy.
template <class Acc, class T>
Scratch<Acc> widened(const Tensor& t) {
  Tensor c = t.contiguous();
  if constexpr (std::is_same_v<T, Acc>) {
    return Scratch<Acc>(c);
  } else {
    const T* p = c.data<T>();
    Scratch<Acc> out(c.numel());
    Acc* o = out.data();
    parallel_for(c.numel(), 1 << 16, [&](int64_t i0, int64_t i1) { row_as<Acc>(p + i0, i1 - i0, o + i0); });
    return out;
  }
}

// A per-channel parameter (a norm's weight or bias, C values) widened to Acc once per call, or
// `absent` in every channel when it is undefined (weight 1, bias 0): row loops then read it without a
// branch, which is what lets them vectorize. Multiplying by 1 or adding 0 changes no value.
template <class Acc, class T>
Scratch<Acc> channel_values(const Tensor& p, int64_t C, Acc absent) {
  return p.defined() ? widened<Acc, T>(p) : Scratch<Acc>(C, absent);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
