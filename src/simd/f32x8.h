// F32x8: eight floats in one AVX2 register, the avx2 tier's twin of F32x16 (f32x16.h) with the same
// operators, helpers and results, so vector_math.h's float functions and the row kernels written over
// FloatVec (float_vec.h) run on it unchanged. What AVX2 lacks is built from integer arithmetic, as the
// scalar overloads compute it: 2^n as two factors, the exponent split, bf16 rounding. Included inside
// a DEW_KERNEL_NS namespace (NOTE [kernel namespaces]); empty outside the avx2 tier.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops/kernel_types.h"
#include "simd/across_lanes.h"
#include "simd/isa.h"

// Tiers that have F32x8: avx2 only (0 where undefined).
#define DEW_HAS_F32X8_avx2 1
#define DEW_HAS_F32X8 DEW_ISA_CONCAT(DEW_HAS_F32X8_, DEW_KERNEL_NS)

#if DEW_HAS_F32X8
DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [F32x8 on AVX2]
// The avx2 tier's maps and rows ran the scalar bodies, auto-vectorized: bf16 results then went through
// float chunks in L1 narrowed in a second loop, and functions whose scalar body does not vectorize
// (clamps before the exp, the exponent split's subnormal branch) ran scalar. F32x8 keeps every value
// in registers from load to store; its results equal the scalar overloads' bit for bit (the same
// operations in the same order), which the gate's ratios and the tier tests hold.
struct F32x8 {
  __m256 v;
  F32x8() = default;
  F32x8(__m256 r) : v(r) {}
  F32x8(float f) : v(_mm256_set1_ps(f)) {}  // constants broadcast, as float code writes them
};
struct Mask8 {
  __m256 m;  // all ones in a lane where true
};

inline F32x8 operator+(F32x8 a, F32x8 b) {
  return _mm256_add_ps(a.v, b.v);
}
inline F32x8 operator-(F32x8 a, F32x8 b) {
  return _mm256_sub_ps(a.v, b.v);
}
inline F32x8 operator*(F32x8 a, F32x8 b) {
  return _mm256_mul_ps(a.v, b.v);
}
inline F32x8 operator/(F32x8 a, F32x8 b) {
  return _mm256_div_ps(a.v, b.v);
}
inline F32x8 operator-(F32x8 a) {
  return _mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f));
}
inline F32x8& operator+=(F32x8& a, F32x8 b) {
  return a = a + b;
}
inline F32x8& operator*=(F32x8& a, F32x8 b) {
  return a = a * b;
}
inline Mask8 operator<(F32x8 a, F32x8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)};
}
inline Mask8 operator>(F32x8 a, F32x8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)};
}
inline Mask8 operator==(F32x8 a, F32x8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)};
}
inline Mask8 operator&&(Mask8 a, Mask8 b) {  // both evaluated, as selects are
  return {_mm256_and_ps(a.m, b.m)};
}

inline F32x8 mul_add(F32x8 a, F32x8 b, F32x8 c) {
  return _mm256_fmadd_ps(a.v, b.v, c.v);
}
inline F32x8 select(Mask8 c, F32x8 a, F32x8 b) {
  return _mm256_blendv_ps(b.v, a.v, c.m);
}
inline F32x8 magnitude(F32x8 a) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v);
}
inline F32x8 with_sign_of(F32x8 m, F32x8 sign) {  // m's bits but sign's sign bit
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(sign_bit, m.v), _mm256_and_ps(sign_bit, sign.v));
}

// Whether c holds in each of lanes 0 .. lanes - 1, lanes in [0, 8].
inline bool all_first_lanes(Mask8 c, int lanes) {
  const int k = (1 << lanes) - 1;
  return (_mm256_movemask_ps(c.m) & k) == k;
}

// The mask of lanes 0 .. lanes - 1 as 32-bit words, lanes in [0, 8].
inline __m256i first_lanes8(int lanes) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// x clamped to [lo, hi]; NaN stays NaN (vminps and vmaxps return their second operand when either is NaN).
inline F32x8 clamp_keep_nan(F32x8 x, float lo, float hi) {
  return _mm256_max_ps(_mm256_set1_ps(lo), _mm256_min_ps(_mm256_set1_ps(hi), x.v));
}
inline F32x8 at_most_keep_nan(F32x8 x, float hi) {  // min(x, hi), NaN kept as clamp_keep_nan keeps it
  return _mm256_min_ps(_mm256_set1_ps(hi), x.v);
}
inline F32x8 at_least_keep_nan(F32x8 x, float lo) {  // max(x, lo), NaN kept as clamp_keep_nan keeps it
  return _mm256_max_ps(_mm256_set1_ps(lo), x.v);
}
// table[i & 15] for the integer i in each lane's low bits (its float's bits): a vpermps from each half
// of the table, chosen by bit 3 (moved to the sign bit, which vblendvps reads).
inline F32x8 lookup16(const float* table, F32x8 i) {
  const __m256i index = _mm256_castps_si256(i.v);
  const __m256 low = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), index);
  const __m256 high = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table + 8), index);
  return _mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32(index, 28)));
}
// y 2^n for integral n in [-151, 128], rounded once: two factors, as the scalar overload, so a subnormal
// result rounds only in the second product.
inline F32x8 times_pow2(F32x8 y, F32x8 n) {
  const __m256i ni = _mm256_cvttps_epi32(n.v), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y.v, f1), f2);
}

// y 2^floor(q) for q in [-151, 129).
inline F32x8 times_pow2_floor(F32x8 y, F32x8 q) {
  return times_pow2(y, _mm256_floor_ps(q.v));
}

// Whether every lane of x lies in [lo, hi] (a NaN lane does not).
inline bool all_lanes_within(F32x8 x, float lo, float hi) {
  const __m256 in = _mm256_and_ps(_mm256_cmp_ps(x.v, _mm256_set1_ps(lo), _CMP_GE_OQ),
                                  _mm256_cmp_ps(x.v, _mm256_set1_ps(hi), _CMP_LE_OQ));
  return _mm256_movemask_ps(in) == 0xff;
}
// y 2^floor(q) for exp's sixteenths form with a normal result (NOTE [exp's normal range on F32x8]):
// floor(q) + 0x04940000 is `shifted`'s bits above the low four, and shifted 23 places left the constant
// leaves the word, so the exponent field gains floor(q) exactly.
inline F32x8 times_pow2_floor_bits(F32x8 y, F32x8 shifted) {
  const __m256i n = _mm256_slli_epi32(_mm256_srli_epi32(_mm256_castps_si256(shifted.v), 4), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y.v), n));
}

// x = 2^k m with m in [1, 2), for finite x > 0 (subnormals scaled into the normals first), as the
// scalar overload computes it; other inputs give values log_special_values replaces.
struct ExponentSplit8 {
  F32x8 m, k;
};
inline ExponentSplit8 split_exponent(F32x8 x) {
  const __m256 tiny = _mm256_cmp_ps(x.v, _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
  const __m256i b =
      _mm256_castps_si256(_mm256_blendv_ps(x.v, _mm256_mul_ps(x.v, _mm256_set1_ps(0x1p24f)), tiny));
  const __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(b, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
  const __m256i e = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(b, 23), _mm256_set1_epi32(0xff)),
                                     _mm256_set1_epi32(127));
  const __m256 k = _mm256_sub_ps(_mm256_cvtepi32_ps(e), _mm256_and_ps(tiny, _mm256_set1_ps(24.0f)));
  return {m, k};
}
// log's special values over the series' result, as the scalar overload: log(0) = -inf, log(x < 0) =
// NaN, log(inf) = inf, NaN stays NaN.
inline F32x8 log_special_values(F32x8 x, F32x8 series) {
  const F32x8 inf(std::numeric_limits<float>::infinity());
  const F32x8 special =
      select(x == F32x8(0.0f), -inf, select(x == inf, inf, std::numeric_limits<float>::quiet_NaN()));
  return select(x > F32x8(0.0f) && x < inf, series, special);
}

// Eight T values widened to float, and eight floats narrowed to T and stored; `lanes` (< 8) for a row's
// tail, whose other lanes read as 0 and are not written.
inline F32x8 widen8(__m128i bf16_bits) {  // bf16 is a float's upper half
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bf16_bits), 16));
}
template <class T>
[[gnu::always_inline]] inline F32x8 load_vec(const T* p) {
  if constexpr (std::is_same_v<T, bf16>)
    return widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else if constexpr (std::is_same_v<T, f16>)  // vcvtph2ps: exact, subnormals included
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else
    return _mm256_loadu_ps(p);
}
// Tails go through memory, not vmaskmovps: QEMU 7.2, which the emulated-CPU tests run on, loads a
// masked load's whole operand, so a masked-off lane past the end of a buffer faults there.
template <class T>
[[gnu::always_inline]] inline F32x8 load_vec(const T* p, int lanes) {
  if (lanes == 8) return load_vec(p);  // callers that pass a constant 8 lose the branch when inlined
  alignas(32) T part[8] = {};
  std::memcpy(part, p, size_t(lanes) * sizeof(T));
  return load_vec(static_cast<const T*>(part));
}

// Eight floats rounded to bf16 bits as dtype.h's f32_to_bf16 rounds them (ties to even, NaN quieted
// with its sign kept; subnormals exact), in the low half.
inline __m128i narrow8_to_bf16(F32x8 v) {
  const __m256i x = _mm256_castps_si256(v.v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256i is_nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i words = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);   // each at most 0xffff
  const __m256i packed = _mm256_packus_epi32(words, words);               // within each 128-bit half
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));  // halves' low quads together
}
template <class T>
[[gnu::always_inline]] inline void store_vec(T* p, F32x8 v, int lanes = 8) {
  alignas(32) T part[8];
  T* to = lanes == 8 ? p : part;
  if constexpr (std::is_same_v<T, bf16>)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to), narrow8_to_bf16(v));
  else if constexpr (std::is_same_v<T, f16>)  // vcvtps2ph: to nearest even, subnormals included
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to), _mm256_cvtps_ph(v.v, _MM_FROUND_TO_NEAREST_INT));
  else
    _mm256_storeu_ps(to, v.v);
  if (lanes < 8) std::memcpy(p, part, size_t(lanes) * sizeof(T));
}

// A non-temporal store of eight floats to a 32-byte aligned p (NOTE [streaming large outputs]).
inline void stream_vec(float* p, F32x8 v) {
  _mm256_stream_ps(p, v.v);
}

// v with lanes `lanes` .. 7 set to 0.
inline F32x8 keep_first_lanes(F32x8 v, int lanes) {
  return _mm256_and_ps(v.v, _mm256_castsi256_ps(first_lanes8(lanes)));
}
// v's lanes folded into one by halves (NOTE [across lanes by halves], across_lanes.h).
template <AcrossLanes Op>
[[gnu::always_inline]] inline float across_lanes(F32x8 v) {
  return across_lanes<Op>(v.v);
}
// Lane i: lanes_sum(v[i]), the 8 folded by lanes_sum's halves (so bit for bit its result) with shared
// shuffles, as F32x16's lanes_sums; the inputs enter in the order that brings the results out in order.
inline F32x8 lanes_sums(const F32x8 (&v)[8]) {
  const auto input = [&](int k) { return v[(k % 2) * 4 + k / 2].v; };
  __m256 halves[4], pairs[2];
  for (int p = 0; p < 4; ++p) {
    const __m256 a = input(2 * p), b = input(2 * p + 1);
    halves[p] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
  }
  for (int q = 0; q < 2; ++q) {
    const __m256 a = halves[2 * q], b = halves[2 * q + 1];
    pairs[q] = _mm256_add_ps(_mm256_shuffle_ps(a, b, 0x44), _mm256_shuffle_ps(a, b, 0xEE));
  }
  return _mm256_add_ps(_mm256_shuffle_ps(pairs[0], pairs[1], 0x88),
                       _mm256_shuffle_ps(pairs[0], pairs[1], 0xDD));
}
// The larger of part and v lane by lane, part where v is NaN (so NaN elements are passed over); only the
// first `lanes` lanes of v count.
inline F32x8 max_skipping_nan(F32x8 part, F32x8 v) {
  return _mm256_max_ps(v.v, part.v);
}
inline F32x8 max_skipping_nan(F32x8 part, F32x8 v, int lanes) {
  return _mm256_blendv_ps(part.v, _mm256_max_ps(v.v, part.v), _mm256_castsi256_ps(first_lanes8(lanes)));
}
inline F32x8 min_skipping_nan(F32x8 part, F32x8 v) {  // as max_skipping_nan, the smaller
  return _mm256_min_ps(v.v, part.v);
}
inline F32x8 min_skipping_nan(F32x8 part, F32x8 v, int lanes) {
  return _mm256_blendv_ps(part.v, _mm256_min_ps(v.v, part.v), _mm256_castsi256_ps(first_lanes8(lanes)));
}

// The running sums of v's lanes (lane i: v[0] + ... + v[i]) by three shifted adds, and v's last lane in
// every lane: a row's prefix sums a vector at a time (cumsum).
inline F32x8 lane_prefix_sums(F32x8 v) {
  const __m256i lane = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  for (int k = 1; k < 8; k *= 2) {  // lanes >= k add the lane k below; the others add 0
    const __m256 below = _mm256_permutevar8x32_ps(v.v, _mm256_sub_epi32(lane, _mm256_set1_epi32(k)));
    v = _mm256_add_ps(
        v.v, _mm256_and_ps(below, _mm256_castsi256_ps(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(k - 1)))));
  }
  return v;
}
inline F32x8 last_lane(F32x8 v) {
  return _mm256_permutevar8x32_ps(v.v, _mm256_set1_epi32(7));
}

// Sums of floats widened to double, eight lanes in two registers.
struct DoubleLanes {
  __m256d low, high;
  DoubleLanes()
      : low(_mm256_setzero_pd()), high(_mm256_setzero_pd()) {}  // user-provided: inside the ISA region
  void add(F32x8 v) {
    low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(v.v)));
    high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps(v.v, 1)));
  }
  double total() const {  // across lanes in a fixed order
    alignas(32) double d[4];
    _mm256_store_pd(d, _mm256_add_pd(low, high));
    return ((d[0] + d[1]) + d[2]) + d[3];
  }
};

using FloatVec = F32x8;
using VecMask = Mask8;
inline constexpr int kVecWidth = 8;

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
#endif
