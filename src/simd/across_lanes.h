// A float vector's lanes folded into one, by halves: the steps F32x16's and F32x8's lanes_sum,
// lanes_max and lanes_min share (f32x16.h, f32x8.h). Included inside a DEW_KERNEL_NS namespace's
// instruction-set region (NOTE [kernel namespaces]); x86-64 only, as the tiers that include it.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "simd/isa.h"

#if defined(__x86_64__)
DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [across lanes by halves]
// lanes_sum, lanes_max and lanes_min fold a vector's upper half onto its lower half until one lane is
// left: log2(width) dependent steps, where a store and a loop over the lanes took one dependent step a
// lane (about 48 cycles of vaddss for 16 lanes at the end of every row of a rows kernel, of the order
// of a 768-wide row's exps). The order is fixed,
// so results stay the same whatever the thread count. lanes_max and lanes_min take lanes without NaN.
enum class AcrossLanes { sum, max, min };
template <AcrossLanes Op>
[[gnu::always_inline]] inline __m256 fold_halves(__m256 a, __m256 b) {
  if constexpr (Op == AcrossLanes::sum) return _mm256_add_ps(a, b);
  if constexpr (Op == AcrossLanes::max) return _mm256_max_ps(a, b);
  if constexpr (Op == AcrossLanes::min) return _mm256_min_ps(a, b);
}
template <AcrossLanes Op>
[[gnu::always_inline]] inline __m128 fold_halves(__m128 a, __m128 b) {
  if constexpr (Op == AcrossLanes::sum) return _mm_add_ps(a, b);
  if constexpr (Op == AcrossLanes::max) return _mm_max_ps(a, b);
  if constexpr (Op == AcrossLanes::min) return _mm_min_ps(a, b);
}
// Eight lanes to one.
template <AcrossLanes Op>
[[gnu::always_inline]] inline float across_lanes(__m256 h) {
  const __m128 q = fold_halves<Op>(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 p = fold_halves<Op>(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(fold_halves<Op>(p, _mm_movehdup_ps(p)));
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
#endif
