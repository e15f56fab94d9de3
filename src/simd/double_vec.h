// DoubleVec: half a FloatVec widened to doubles (eight lanes on the avx512 tier, four on the avx2),
// with the arithmetic, lane-bit operations and 16-entry table lookup that f32 pow's double arithmetic
// is written with (NOTE [pow through double], src/ops/binary/pow.h). Not a general SIMD library: only
// what that needs. Included inside a DEW_KERNEL_NS namespace; empty outside the two tiers.
#pragma once

#include <array>
#include <cstdint>

#include "simd/float_vec.h"

#if DEW_HAS_FLOAT_VEC
DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// The register and its lanes' bits as GCC vector types (which clang shares): +, -, *, &, |, << and >>
// act lane by lane, so the tiers write only what needs an intrinsic (fma, min/max, permutes,
// conversions). (Casting between two such types of one size keeps the bits.)
#if DEW_HAS_F32X16
using DoubleRegister = __m512d;
#else
using DoubleRegister = __m256d;
#endif
inline constexpr int kDoubleLanes = int(sizeof(DoubleRegister) / sizeof(double));
using LaneBits = uint64_t __attribute__((vector_size(sizeof(DoubleRegister))));

struct DoubleVec {
  DoubleRegister v;
};
inline DoubleVec broadcast_double(double d) {
  DoubleVec r{};
  for (int i = 0; i < kDoubleLanes; ++i) r.v[i] = d;
  return r;
}
inline DoubleVec broadcast_bits(uint64_t bits) {
  LaneBits r{};
  for (int i = 0; i < kDoubleLanes; ++i) r[i] = bits;
  return {DoubleRegister(r)};
}
inline DoubleVec operator+(DoubleVec a, DoubleVec b) {
  return {a.v + b.v};
}
inline DoubleVec operator-(DoubleVec a, DoubleVec b) {
  return {a.v - b.v};
}
inline DoubleVec operator*(DoubleVec a, DoubleVec b) {
  return {a.v * b.v};
}
// Integer arithmetic on the lanes' 64-bit patterns (shifts logical).
inline DoubleVec bits_add(DoubleVec a, DoubleVec b) {
  return {DoubleRegister(LaneBits(a.v) + LaneBits(b.v))};
}
inline DoubleVec bits_sub(DoubleVec a, DoubleVec b) {
  return {DoubleRegister(LaneBits(a.v) - LaneBits(b.v))};
}
inline DoubleVec bits_and(DoubleVec a, DoubleVec b) {
  return {DoubleRegister(LaneBits(a.v) & LaneBits(b.v))};
}
inline DoubleVec bits_or(DoubleVec a, DoubleVec b) {
  return {DoubleRegister(LaneBits(a.v) | LaneBits(b.v))};
}
template <int N>
inline DoubleVec bits_shift_right(DoubleVec a) {
  return {DoubleRegister(LaneBits(a.v) >> N)};
}
template <int N>
inline DoubleVec bits_shift_left(DoubleVec a) {
  return {DoubleRegister(LaneBits(a.v) << N)};
}

#if DEW_HAS_F32X16
// (GCC 12 warns of the undefined pass-through of some unmasked AVX-512 intrinsics; their maskz forms
// with every lane set are the same instructions.)
inline DoubleVec mul_add(DoubleVec a, DoubleVec b, DoubleVec c) {
  return {_mm512_fmadd_pd(a.v, b.v, c.v)};
}
inline DoubleVec clamp(DoubleVec x, double lo, double hi) {  // x not NaN
  return {_mm512_maskz_max_pd(0xff, _mm512_set1_pd(lo), _mm512_maskz_min_pd(0xff, _mm512_set1_pd(hi), x.v))};
}
// table[i & 15] for the integer i in each lane's low four bits: one vpermt2pd over the table's halves.
inline DoubleVec lookup16(const double* table, DoubleVec i) {
  return {_mm512_permutex2var_pd(_mm512_load_pd(table), _mm512_castpd_si512(i.v), _mm512_load_pd(table + 8))};
}
inline std::array<DoubleVec, 2> widen_halves(F32x16 v) {  // lanes 0-7 and 8-15, exactly
  return {DoubleVec{_mm512_maskz_cvtps_pd(0xff, _mm512_maskz_extractf32x8_ps(0xff, v.v, 0))},
          DoubleVec{_mm512_maskz_cvtps_pd(0xff, _mm512_maskz_extractf32x8_ps(0xff, v.v, 1))}};
}
inline F32x16 narrow_halves(DoubleVec low, DoubleVec high) {  // each lane rounded once to float
  const __m512 with_low =
      _mm512_maskz_insertf32x8(0xffff, _mm512_setzero_ps(), _mm512_maskz_cvtpd_ps(0xff, low.v), 0);
  return _mm512_maskz_insertf32x8(0xffff, with_low, _mm512_maskz_cvtpd_ps(0xff, high.v), 1);
}
#else
inline DoubleVec mul_add(DoubleVec a, DoubleVec b, DoubleVec c) {
  return {_mm256_fmadd_pd(a.v, b.v, c.v)};
}
inline DoubleVec clamp(DoubleVec x, double lo, double hi) {  // x not NaN
  return {_mm256_max_pd(_mm256_set1_pd(lo), _mm256_min_pd(_mm256_set1_pd(hi), x.v))};
}
// table[i & 15]: each quarter of the table permuted by vpermps (lane j takes words 2(i & 3) and
// 2(i & 3) + 1), then bits 2 and 3 of i choose (moved to the sign bit, which vblendvpd reads). Not a
// gather: QEMU 7.2, which the emulated-CPU test runs on, faults on vgatherqpd from a valid table.
inline DoubleVec lookup16(const double* table, DoubleVec i) {
  const __m256i bits = _mm256_castpd_si256(i.v);
  const __m256i twice = _mm256_slli_epi64(_mm256_and_si256(bits, _mm256_set1_epi64x(3)), 1);
  const __m256i words = _mm256_or_si256(_mm256_or_si256(twice, _mm256_slli_epi64(twice, 32)),
                                        _mm256_set1_epi64x(int64_t(1) << 32));
  auto quarter = [&](int q) {
    return _mm256_castps_pd(
        _mm256_permutevar8x32_ps(_mm256_castpd_ps(_mm256_loadu_pd(table + 4 * q)), words));
  };
  const __m256d bit2 = _mm256_castsi256_pd(_mm256_slli_epi64(bits, 61)),
                bit3 = _mm256_castsi256_pd(_mm256_slli_epi64(bits, 60));
  return {_mm256_blendv_pd(_mm256_blendv_pd(quarter(0), quarter(1), bit2),
                           _mm256_blendv_pd(quarter(2), quarter(3), bit2), bit3)};
}
inline std::array<DoubleVec, 2> widen_halves(F32x8 v) {  // lanes 0-3 and 4-7, exactly
  return {DoubleVec{_mm256_cvtps_pd(_mm256_castps256_ps128(v.v))},
          DoubleVec{_mm256_cvtps_pd(_mm256_extractf128_ps(v.v, 1))}};
}
inline F32x8 narrow_halves(DoubleVec low, DoubleVec high) {  // each lane rounded once to float
  return _mm256_set_m128(_mm256_cvtpd_ps(high.v), _mm256_cvtpd_ps(low.v));
}
#endif

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
#endif
