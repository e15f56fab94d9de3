// Reductions over L partial lanes, the one pattern every kernel.h reduces with: L = 1 in portable
// builds, kLanes (8 or 16) in the cpu tiers, where the compiler turns the lanes into one vector register
// (float sums do not vectorize otherwise: that would reassociate them). Included inside a DEW_KERNEL_NS
// namespace (NOTE [kernel namespaces]).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/kernel_types.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// sum of f(i) for i in [0, n)
template <int L, class Acc, class F>
inline Acc lane_sum(int64_t n, F&& f) {
  Acc part[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) part[l] += f(i + l);
  Acc s = 0;
  for (int l = 0; l < L; ++l) s += part[l];
  for (; i < n; ++i) s += f(i);
  return s;
}

// L values of a contiguous row, widened to Acc, as one vector (GCC/clang vector extensions): the
// compilers do not vectorize a compare-and-select over L separate partials, but they do over a vector.
template <class E, int L>
struct LaneVector {
  typedef E type __attribute__((vector_size(sizeof(E) * L)));
};

template <int L, class Acc, class T>
inline auto load_lanes(const T* x) {
  typename LaneVector<Acc, L>::type v;
  if constexpr (std::is_same_v<T, Acc>) {
    __builtin_memcpy(&v, x, sizeof v);
  } else if constexpr (std::is_same_v<T, bf16> && std::is_same_v<Acc, float>) {  // bf16 = high half
    using Word = typename LaneVector<uint32_t, L>::type;
    typename LaneVector<uint16_t, L>::type h;
    __builtin_memcpy(&h, x, sizeof h);
    const Word w = __builtin_convertvector(h, Word) << 16;
    __builtin_memcpy(&v, &w, sizeof v);
  } else {
    for (int l = 0; l < L; ++l) v[l] = widen<Acc>(x[l]);
  }
  return v;
}

// max of widen(x[i]) over a contiguous row; -inf when n = 0. NaN elements are passed over: the
// callers' next pass (exp(x - max)) carries them into the row's result.
template <int L, class Acc, class T>
inline Acc row_max(const T* x, int64_t n) {
  using V = typename LaneVector<Acc, L>::type;
  constexpr Acc lowest = -std::numeric_limits<Acc>::infinity();
  V part = V{} + lowest;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V v = load_lanes<L, Acc>(x + i);
    part = v > part ? v : part;
  }
  Acc m = lowest;
  for (int l = 0; l < L; ++l) m = part[l] > m ? part[l] : m;
  for (; i < n; ++i) {
    const Acc v = widen<Acc>(x[i]);
    m = v > m ? v : m;
  }
  return m;
}

template <int L, class Acc>
inline Acc dot(const Acc* a, const Acc* b, int64_t n) {
  return lane_sum<L, Acc>(n, [&](int64_t i) { return a[i] * b[i]; });
}

// out[i] = sum over b of parts[b * C + i], for the blocks b in [0, blocks) in order (the norms' weight
// gradients: fixed blocks of rows, so the sums do not depend on the thread count), narrowed to T. A
// block's row at a time into C running sums, the same additions in the same order as a walk down each
// column, which strides through memory a row apart.
template <class Acc, class T>
inline void sum_block_partials(const Acc* parts, int64_t blocks, int64_t C, Acc* sums, T* out) {
  std::fill(sums, sums + C, Acc(0));
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0; i < C; ++i) sums[i] += parts[b * C + i];
  for (int64_t i = 0; i < C; ++i) out[i] = narrow<T>(sums[i]);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
