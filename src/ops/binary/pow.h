// pow(a, b) on the CPU tiers: exp(b ln a) for a in (0, inf) and finite b, everything else (a <= 0,
// infinities, NaN) through std::pow, lane by lane, so the special cases are libm's as on the portable
// path. f32 results compute in double (NOTE [pow through double]); bf16 and f16 in float on FloatVec.
// Not here: strided rows, which binary_rows runs through std::pow.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/binary/pow_tables.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "simd/double_vec.h"
#include "simd/float_vec.h"
#include "simd/isa.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// Whether exp(b ln a) is pow(a, b): a positive and finite (a NaN fails a > 0), b finite.
[[gnu::always_inline]] inline bool pow_by_exp_log(float a, float b) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return a > 0.0f && a < kInf && std::fabs(b) < kInf;
}

// NOTE [pow through double]
// f32 pow = exp(b ln a) loses |b ln a| ulps in float (the error of ln a, amplified), where libm's powf,
// the portable path, is within an ulp. In double it is exact to about 2^-42 relative before its one
// rounding to float, by glibc powf's scheme on vectors of doubles (DoubleVec, double_vec.h):
// - a = 2^k z from a's bits, z in [0.699, 1.398); c from a 16-entry table by z's sixteenth (exactly 1
//   in the sixteenth holding 1, so log2 a stays exact relative near a = 1); r = z/c - 1 by one fma with
//   1/c (|r| < 0.0296, no division); log2 a = k + log2 c + log2(1 + r), the last to r^8 (its first
//   omitted term below 2^-48, and 2^-46 relative where c = 1);
// - y = b log2 a, clamped to +-200, past float's range both ways; 2^y = 2^(q/16) 2^f for q = round(16 y)
//   and |f| <= 1/32: 2^(q/16) from a 16-entry table plus q's bits in the exponent, 2^f to f^5 (2^-42).
// The polynomials go by Estrin's scheme. p 2^(q/16) is a normal double and its conversion to float rounds
// overflow to inf and underflow to subnormals or 0, once. The tables sit in registers (one vpermt2pd a
// lookup on AVX-512; four vpermps and three blends on AVX2). The same expression at every lane and thread
// count, so the same bits. No division (an atanh series has one) and a short exp.
// log2(1 + r) / r = sum over n of (-1)^n r^n / ((n + 1) ln 2).
constexpr double log2_series(int n) {
  return (n % 2 ? -kInverseLn2 : kInverseLn2) / (n + 1);
}
// 2^f = sum over n of (f ln 2)^n / n!.
constexpr double exp2_series(int n) {
  double c = 1;
  for (int i = 1; i <= n; ++i) c = c * 0.69314718055994530942 / i;
  return c;
}

#if DEW_HAS_FLOAT_VEC
// Whether pow_by_exp_log holds in each of lanes 0 .. lanes - 1. On AVX-512 by two vfpclassps (a: NaN,
// zero, infinite or negative; b: NaN or infinite), where the comparisons took seven instructions of
// bf16 pow's forty.
[[gnu::always_inline]] inline bool pow_by_exp_log(FloatVec a, FloatVec b, int lanes) {
#if DEW_HAS_F32X16
  const __mmask16 outside = _mm512_fpclass_ps_mask(a.v, 0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x40 | 0x80) |
                            _mm512_fpclass_ps_mask(b.v, 0x01 | 0x08 | 0x10 | 0x80);
  return (outside & first_lanes(lanes)) == 0;
#else
  const FloatVec infinity(std::numeric_limits<float>::infinity());
  return all_first_lanes((a > FloatVec(0.0f)) && (a < infinity) && (magnitude(b) < infinity), lanes);
#endif
}

// pow(a, b) lane by lane for a in (0, inf) and finite b, both widened exactly from float.
[[gnu::always_inline]] inline DoubleVec pow_in_double(DoubleVec a, DoubleVec b, const PowTables& t) {
  const auto c = broadcast_double;
  // bits(a) + 1024 << 52 keeps the fields below positive for every float a (exponents -149 to 127): less
  // bits(offset), its top twelve bits are k + 1024 and the rest z's place above the offset.
  const DoubleVec u = bits_add(a, broadcast_bits(uint64_t(1024) << 52));
  const DoubleVec d = bits_sub(u, broadcast_bits(kPowLogOffsetBits));
  const DoubleVec z = bits_sub(u, bits_and(d, broadcast_bits(0xfff0000000000000)));
  const DoubleVec k = bits_or(bits_shift_right<52>(d), c(0x1p52)) - c(0x1p52 + 1024);  // exact
  const DoubleVec sixteenth = bits_shift_right<48>(d);  // lookup16 reads its low four bits
  const DoubleVec r = mul_add(z, lookup16(t.inverse_centers, sixteenth), c(-1.0));
  const DoubleVec r2 = r * r, r4 = r2 * r2;
  const DoubleVec q01 = mul_add(r, c(log2_series(1)), c(log2_series(0)));
  const DoubleVec q23 = mul_add(r, c(log2_series(3)), c(log2_series(2)));
  const DoubleVec q45 = mul_add(r, c(log2_series(5)), c(log2_series(4)));
  const DoubleVec q67 = mul_add(r, c(log2_series(7)), c(log2_series(6)));
  const DoubleVec series = mul_add(mul_add(q67, r2, q45), r4, mul_add(q23, r2, q01));
  const DoubleVec log2_a = mul_add(r, series, k + lookup16(t.log2_centers, sixteenth));
  const DoubleVec y = clamp(b * log2_a, -200.0, 200.0);
  // q = round(16 y) in the low bits of y + 1.5 2^48, a double whose ulp is 1/16; f = y - q/16 exactly.
  constexpr double kShift = 0x1.8p48;
  const DoubleVec shifted = y + c(kShift), f = y - (shifted - c(kShift)), f2 = f * f;
  const DoubleVec p01 = mul_add(f, c(exp2_series(1)), c(1.0));
  const DoubleVec p23 = mul_add(f, c(exp2_series(3)), c(exp2_series(2)));
  const DoubleVec p45 = mul_add(f, c(exp2_series(5)), c(exp2_series(4)));
  const DoubleVec p = mul_add(mul_add(p45, f2, p23), f2, p01);
  // bits(shifted) << 48 is q << 48 (1.5 2^48's low sixteen bits are zero): 2^(q/16)'s bits with the table's.
  return p * bits_add(lookup16(t.exp2_sixteenths, shifted), bits_shift_left<48>(shifted));
}

// f32 pow of a FloatVec: its two halves in double.
[[gnu::always_inline]] inline FloatVec pow_f32_vec(FloatVec a, FloatVec b, const PowTables& t) {
  const auto [a_low, a_high] = widen_halves(a);
  const auto [b_low, b_high] = widen_halves(b);
  return narrow_halves(pow_in_double(a_low, b_low, t), pow_in_double(a_high, b_high, t));
}

// bf16 and f16 results: 2^(b log2 a) in float, whose error (a few float ulps of |b log2 a|, which is
// at most 130 before the result leaves bf16's range) is far below their rounding (2^-9, 2^-12).
template <class T>
[[gnu::always_inline]] inline FloatVec pow_vec_rounding_to(FloatVec a, FloatVec b) {
  return exp2_rounding_to<T>(b * log_by_sixteenths<LogBase::two>(a));
}

// y[i] = pow(a[i], b[i * b_stride]) for i in [0, n), b_stride 0 (one exponent) or 1, a vector at a
// time straight from T, the lanes outside exp(b ln a)'s domain (checked on the vector) redone by
// std::pow. T's rows must be on FloatVec here (rows_on_float_vec). Whole vectors load and store
// unmasked, the tail alone masked: masked stores are slow on AMD's AVX-512 cores.
template <class T>
void pow_row(const T* a, const T* b, int64_t b_stride, T* y, int64_t n) {
  const PowTables& tables = pow_tables();
  const FloatVec exponent = b_stride == 0 ? FloatVec(widen<float>(b[0])) : FloatVec(0.0f);
  const auto one_vector = [&](int64_t i, int lanes) __attribute__((always_inline)) {
    const bool whole = lanes == kVecWidth;
    const FloatVec va = whole ? load_vec(a + i) : load_vec(a + i, lanes);
    const FloatVec vb = b_stride == 0 ? exponent : whole ? load_vec(b + i) : load_vec(b + i, lanes);
    FloatVec r;
    if constexpr (std::is_same_v<T, float>)
      r = pow_f32_vec(va, vb, tables);
    else
      r = pow_vec_rounding_to<T>(va, vb);
    if (!pow_by_exp_log(va, vb, lanes)) {
      alignas(64) float fixed[kVecWidth];
      store_vec(fixed, r);
      for (int j = 0; j < lanes; ++j) {
        const float x = widen<float>(a[i + j]), z = widen<float>(b[(i + j) * b_stride]);
        if (!pow_by_exp_log(x, z)) fixed[j] = std::pow(x, z);
      }
      r = load_vec(fixed);
    }
    if (whole)
      store_vec(y + i, r);
    else
      store_vec(y + i, r, lanes);
  };
  int64_t i = 0;
#if DEW_HAS_F32X16
  if constexpr (std::is_same_v<T, bf16>)  // NOTE [bf16 maps by even and odd]
    if (b_stride == 1)
      for (; i + 2 * kVecWidth <= n; i += 2 * kVecWidth) {
        prefetch_map(std::array<const T*, 2>{a, b}, std::array<T*, 1>{y}, i, 2 * kVecWidth);
        const auto [a_even, a_odd] = load_even_odd(a + i);
        const auto [b_even, b_odd] = load_even_odd(b + i);
        if (pow_by_exp_log(a_even, b_even, kVecWidth) && pow_by_exp_log(a_odd, b_odd, kVecWidth) &&
            store_even_odd(y + i, pow_vec_rounding_to<T>(a_even, b_even),
                           pow_vec_rounding_to<T>(a_odd, b_odd)))
          continue;
        one_vector(i, kVecWidth), one_vector(i + kVecWidth, kVecWidth);
      }
#endif
  for (; i + kVecWidth <= n; i += kVecWidth) {
    if (b_stride == 1)  // NOTE [prefetching maps]
      prefetch_map(std::array<const T*, 2>{a, b}, std::array<T*, 1>{y}, i, kVecWidth);
    one_vector(i, kVecWidth);
  }
  if (i < n) one_vector(i, int(n - i));
}
#endif

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
