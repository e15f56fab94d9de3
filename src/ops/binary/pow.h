// pow(a, b) on the CPU tiers: exp(b ln a) for a in (0, inf) and finite b, everything else (a <= 0,
// infinities, NaN) through std::pow, lane by lane, so the special cases are libm's as on the portable
// path. f32 results compute in double (NOTE [pow through double]); bf16 and f16 in float on FloatVec.
// Not here: strided rows, which binary_rows runs through std::pow.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/float_vec.h"
#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// Whether exp(b ln a) is pow(a, b): a positive and finite (a NaN fails a > 0), b finite.
// (& rather than &&: no branch, so the loop that asks it of a chunk vectorizes.)
[[gnu::always_inline]] inline bool pow_by_exp_log(float a, float b) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return (a > 0.0f) & (a < kInf) & (std::fabs(b) < kInf);
}

// NOTE [pow through double]
// f32 pow = exp(b ln a) loses |b ln a| ulps in float (the error of ln a, amplified), where libm's powf,
// the portable path, is within an ulp. In double it is exact to about 2^-45 relative before its one
// rounding to float: ln a = e ln 2 + 2 atanh(s), s = (m - 1)/(m + 1) for a = 2^e m, m in [0.707, 1.414)
// (|s| <= 0.172: eight terms of the series leave 2^-39), y = b ln a, exp(y) = 2^k exp(r) with r = y - k
// ln 2 (|r| <= 0.347: degree 11 leaves 2^-47), 2^k from k's bits. y is clamped to +-200, past float's
// range both ways, so p 2^k is a normal double and its conversion to float rounds overflow to inf and
// underflow to subnormals or 0, once. Plain arithmetic on double, no table and no branch: the loop that
// calls it vectorizes (8 lanes on AVX-512, 4 on AVX2). The same expression at every lane and thread
// count, so the same bits.
// The polynomials go by Estrin's scheme, which halves the polynomials' dependent steps for a
// few more multiplications: 5-10% faster than Horner's rule here (in-process, gpt2_residual's 3.1 M
// values: 3.0-3.2 -> 2.8-2.9 ms at the minimum). The loop still takes about four times what its FMAs
// alone would on two FMA pipes; what bounds it is not found yet (docs/perf.md).
[[gnu::always_inline]] inline float pow_f32_through_double(float a, float b) {
  // a = 2^e m with m in [sqrt(1/2), sqrt(2)): subnormal a scaled into the normal range first.
  const bool subnormal = a < 0x1p-126f;
  const float scaled = subnormal ? a * 0x1p23f : a;
  const int32_t bits = std::bit_cast<int32_t>(scaled);
  const int32_t e = ((bits - 0x3f3504f3) >> 23) - (subnormal ? 23 : 0);
  const float m = std::bit_cast<float>(bits - (((bits - 0x3f3504f3) >> 23) << 23));
  const double md = m, s = (md - 1.0) / (md + 1.0), s2 = s * s;
  // atanh(s) / s = 1 + z/3 + z^2/5 + ... + z^8/17, z = s^2, by Estrin's scheme: four dependent steps
  // where Horner's took eight.
  const double z = s2, z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
  const double series_low = std::fma(std::fma(z, 1.0 / 7, 1.0 / 5), z2, std::fma(z, 1.0 / 3, 1.0));
  const double series_high = std::fma(std::fma(z, 1.0 / 15, 1.0 / 13), z2, std::fma(z, 1.0 / 11, 1.0 / 9));
  const double series = std::fma(1.0 / 17, z8, std::fma(series_high, z4, series_low));
  constexpr double kLn2 = 0.69314718055994530942, kLn2High = 6.93147180369123816490e-01,
                   kLn2Low = 1.90821492927058770002e-10;  // kLn2High has 32 bits: k kLn2High is exact
  const double ln_a = std::fma(double(e), kLn2, 2.0 * s * series);
  double y = double(b) * ln_a;
  y = y < -200.0 ? -200.0 : (y > 200.0 ? 200.0 : y);
  // k = round(y / ln 2) from the low bits of y / ln 2 + 1.5 2^52.
  constexpr double kShift = 0x1.8p52;
  const double shifted = y * (1.0 / kLn2) + kShift, k = shifted - kShift;
  const double r = std::fma(-k, kLn2Low, std::fma(-k, kLn2High, y));
  // exp(r) to r^11/11! by Estrin's scheme too.
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double p_low = std::fma(std::fma(r, 1.0 / 6, 0.5), r2, std::fma(r, 1.0, 1.0));
  const double p_middle = std::fma(std::fma(r, 1.0 / 5040, 1.0 / 720), r2, std::fma(r, 1.0 / 120, 1.0 / 24));
  const double p_high =
      std::fma(std::fma(r, 1.0 / 39916800, 1.0 / 3628800), r2, std::fma(r, 1.0 / 362880, 1.0 / 40320));
  const double p = std::fma(p_high, r8, std::fma(p_middle, r4, p_low));
  const int64_t k_bits = std::bit_cast<int64_t>(shifted) - std::bit_cast<int64_t>(kShift);
  const double two_to_k = std::bit_cast<double>((k_bits + 1023) << 52);
  return float(p * two_to_k);
}

#if DEW_HAS_FLOAT_VEC
// bf16 and f16 results: exp(b ln a) in float, whose error (a few float ulps of |b ln a|, which is at
// most 89 before the result leaves bf16's range) is far below their rounding (2^-9, 2^-12).
template <class T>
[[gnu::always_inline]] inline FloatVec pow_vec_rounding_to(FloatVec a, FloatVec b) {
  return exp_rounding_to<T>(b * log_f32_within_few_ulps(a));
}

// y[i] = pow(a[i], b[i * b_stride]) for i in [0, n), b_stride 0 (one exponent) or 1, the lanes outside
// exp(b ln a)'s domain redone by std::pow. f32 by chunks (the loop the compiler vectorizes in double);
// bf16 and f16 a vector at a time, straight from T, the domain checked on the vector. T's rows must be
// on FloatVec here (rows_on_float_vec).
template <class T>
void pow_row(const T* a, const T* b, int64_t b_stride, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    alignas(64) float one_exponent[kMapChunk];
    if (b_stride == 0) std::fill_n(one_exponent, kMapChunk, b[0]);
    for (int64_t c = 0; c < n; c += kMapChunk) {
      const int64_t len = std::min(kMapChunk, n - c);
      const float *ca = a + c, *cb = b_stride == 0 ? one_exponent : b + c;
      if (b_stride == 1) prefetch_map(std::array<const T*, 2>{a, b}, std::array<T*, 1>{y}, c, len);
      for (int64_t i = 0; i < len; ++i) y[c + i] = pow_f32_through_double(ca[i], cb[i]);
      int outside = 0;
      for (int64_t i = 0; i < len; ++i) outside |= !pow_by_exp_log(ca[i], cb[i]);
      if (outside)
        for (int64_t i = 0; i < len; ++i)
          if (!pow_by_exp_log(ca[i], cb[i])) y[c + i] = std::pow(ca[i], cb[i]);
    }
  } else {
    const FloatVec infinity(std::numeric_limits<float>::infinity());
    const FloatVec exponent = b_stride == 0 ? FloatVec(widen<float>(b[0])) : FloatVec(0.0f);
    for (int64_t i = 0; i < n; i += kVecWidth) {
      const int lanes = int(std::min<int64_t>(kVecWidth, n - i));
      if (lanes == kVecWidth && b_stride == 1)  // NOTE [prefetching maps]
        prefetch_map(std::array<const T*, 2>{a, b}, std::array<T*, 1>{y}, i, kVecWidth);
      const FloatVec va = load_vec(a + i, lanes), vb = b_stride == 0 ? exponent : load_vec(b + i, lanes);
      FloatVec r = pow_vec_rounding_to<T>(va, vb);
      if (!all_first_lanes((va > FloatVec(0.0f)) && (va < infinity) && (magnitude(vb) < infinity), lanes)) {
        alignas(64) float fixed[kVecWidth];
        store_vec(fixed, r);
        for (int j = 0; j < lanes; ++j) {
          const float x = widen<float>(a[i + j]), z = widen<float>(b[(i + j) * b_stride]);
          if (!pow_by_exp_log(x, z)) fixed[j] = std::pow(x, z);
        }
        r = load_vec(fixed);
      }
      store_vec(y + i, r, lanes);
    }
  }
}
#endif

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
