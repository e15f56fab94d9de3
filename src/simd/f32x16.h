// F32x16: sixteen floats in one AVX-512 register, with the operators and helpers that vector_math.h's
// float functions are written with, so one template body runs as scalar float (auto-vectorized, every
// tier) and as F32x16 (the avx512 tier's elementwise maps, map_elements.h). Not a general SIMD
// library: only what those functions need. Included inside a DEW_KERNEL_NS namespace (NOTE [kernel
// namespaces]); empty outside the avx512 tier.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops/kernel_types.h"
#include "simd/across_lanes.h"
#include "simd/isa.h"

// Tiers that have F32x16: avx512 only (0 where undefined).
#define DEW_HAS_F32X16_avx512 1
#define DEW_HAS_F32X16 DEW_ISA_CONCAT(DEW_HAS_F32X16_, DEW_KERNEL_NS)

#if DEW_HAS_F32X16
DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [one body for scalar and vector float functions]
// Auto-vectorized scalar code cannot reach AVX-512's vscalefps (2^n in one instruction, rounding once
// into the subnormals) or vfpclassps, and it compiles a NaN-keeping clamp into masked compares, which
// cost the exps a third or more of their time. So vector_math.h writes a function once over F and calls only
// the overloads here (mul_add, clamp_keep_nan, times_pow2, select, magnitude, ...), which float and F32x16
// both have with the same results. Divisions are vdivps: vrcp14ps and a Newton step is no faster on these
// cores.
struct F32x16 {
  __m512 v;
  F32x16() = default;
  F32x16(__m512 r) : v(r) {}
  F32x16(float f) : v(_mm512_set1_ps(f)) {}  // constants broadcast, as float code writes them
};
struct Mask16 {
  __mmask16 m;
};

inline F32x16 operator+(F32x16 a, F32x16 b) {
  return _mm512_add_ps(a.v, b.v);
}
inline F32x16 operator-(F32x16 a, F32x16 b) {
  return _mm512_sub_ps(a.v, b.v);
}
inline F32x16 operator*(F32x16 a, F32x16 b) {
  return _mm512_mul_ps(a.v, b.v);
}
inline F32x16 operator/(F32x16 a, F32x16 b) {
  return _mm512_div_ps(a.v, b.v);
}
inline F32x16 operator-(F32x16 a) {
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a.v), _mm512_set1_epi32(INT32_MIN)));
}
inline F32x16& operator+=(F32x16& a, F32x16 b) {
  return a = a + b;
}
inline F32x16& operator*=(F32x16& a, F32x16 b) {
  return a = a * b;
}
inline Mask16 operator<(F32x16 a, F32x16 b) {
  return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ)};
}
inline Mask16 operator>(F32x16 a, F32x16 b) {
  return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ)};
}

inline Mask16 operator==(F32x16 a, F32x16 b) {
  return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_EQ_OQ)};
}
inline Mask16 operator&&(Mask16 a, Mask16 b) {  // both evaluated, as selects are
  return {__mmask16(a.m & b.m)};
}

inline F32x16 mul_add(F32x16 a, F32x16 b, F32x16 c) {
  return _mm512_fmadd_ps(a.v, b.v, c.v);
}
inline F32x16 select(Mask16 c, F32x16 a, F32x16 b) {
  return _mm512_mask_blend_ps(c.m, b.v, a.v);
}
inline F32x16 magnitude(F32x16 a) {
  return _mm512_abs_ps(a.v);
}
inline F32x16 with_sign_of(F32x16 m, F32x16 sign) {  // m's bits but sign's sign bit
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(m.v), _mm512_castps_si512(sign.v),
                                                       _mm512_set1_epi32(INT32_MAX),
                                                       0xe4));  // mask ? m : sign, bit by bit
}
// The masked forms with every lane set: GCC 12's unmasked vmaxps, vminps and vscalefps start from an
// undefined register that -Wmaybe-uninitialized reports (GCC bug 105593); so do vpmovzxwd and vpslld.
inline constexpr __mmask16 kAllLanes = 0xffff;

// The mask of lanes 0 .. lanes - 1, lanes in [0, 16].
inline __mmask16 first_lanes(int lanes) {
  return __mmask16((1u << lanes) - 1);
}
// Whether c holds in each of lanes 0 .. lanes - 1.
inline bool all_first_lanes(Mask16 c, int lanes) {
  const __mmask16 k = first_lanes(lanes);
  return (c.m & k) == k;
}

// x clamped to [lo, hi]; NaN stays NaN (vminps returns its second operand when either is NaN).
inline F32x16 clamp_keep_nan(F32x16 x, float lo, float hi) {
  const __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi);
  return _mm512_mask_max_ps(l, kAllLanes, l, _mm512_mask_min_ps(h, kAllLanes, h, x.v));
}
inline F32x16 at_most_keep_nan(F32x16 x, float hi) {  // min(x, hi), NaN kept as clamp_keep_nan keeps it
  const __m512 h = _mm512_set1_ps(hi);
  return _mm512_mask_min_ps(h, kAllLanes, h, x.v);
}
inline F32x16 at_least_keep_nan(F32x16 x, float lo) {  // max(x, lo), NaN kept as clamp_keep_nan keeps it
  const __m512 l = _mm512_set1_ps(lo);
  return _mm512_mask_max_ps(l, kAllLanes, l, x.v);
}
// y 2^n for integral n, rounded once (into the subnormals too).
inline F32x16 times_pow2(F32x16 y, F32x16 n) {
  return _mm512_mask_scalef_ps(y.v, kAllLanes, y.v, n.v);
}
// y 2^floor(q): vscalefps floors its exponent operand itself.
inline F32x16 times_pow2_floor(F32x16 y, F32x16 q) {
  return times_pow2(y, q);
}

// table[i & 15] for the integer i in each lane's low bits (its float's bits): one vpermps.
inline F32x16 lookup16(const float* table, F32x16 i) {
  return _mm512_maskz_permutexvar_ps(kAllLanes, _mm512_castps_si512(i.v), _mm512_loadu_ps(table));
}

// table[i & 31] for the integer i in each lane's low bits: one vpermt2ps over two registers of table.
inline F32x16 lookup32(const float* table, F32x16 i) {
  return _mm512_permutex2var_ps(_mm512_loadu_ps(table), _mm512_castps_si512(i.v),
                                _mm512_loadu_ps(table + 16));
}

// y - floor(32 y) / 32 in [0, 1/32), rounded down: one vreduceps (0 where |y| >= 2^18 and at the
// infinities, NaN kept).
inline F32x16 below_thirty_seconds(F32x16 y) {
  return _mm512_maskz_reduce_ps(kAllLanes, y.v, (5 << 4) | _MM_FROUND_NO_EXC | _MM_FROUND_TO_NEG_INF);
}
// y + 1.5 2^18 rounded down, whose low five bits hold floor(32 y) mod 32 where |y| < 2^17 (lookup32's index).
inline F32x16 thirty_seconds_index(F32x16 y) {
  return _mm512_maskz_add_round_ps(kAllLanes, y.v, _mm512_set1_ps(0x1.8p18f),
                                   _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

// x = 2^k m with m in [1, 2) for finite x > 0, subnormals included: vgetmantps and vgetexpps. For the
// others, as those instructions define them: m NaN for x < 0 or NaN, m = 1 and k = inf for inf, and
// k = -inf for zero.
struct ExponentSplit16 {
  F32x16 m, k;
};
inline ExponentSplit16 split_exponent(F32x16 x) {
  return {_mm512_maskz_getmant_ps(kAllLanes, x.v, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_nan),
          _mm512_maskz_getexp_ps(kAllLanes, x.v)};
}
// log's special values (vector_math.h's logs): split_exponent's m and k carry x < 0 (NaN), NaN and
// inf (k inf, m 1) through the series; zero, whose m may be signed or NaN, is set to -inf here.
inline F32x16 log_special_values(F32x16 x, F32x16 series) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x.v, _mm512_setzero_ps(), _CMP_EQ_OQ), series.v,
                              _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
}

// Sixteen T values widened to float, and sixteen floats narrowed to T and stored; `lanes` (< 16) for a
// row's tail, whose other lanes read as 0 and are not written.
inline F32x16 widen16(__m256i bf16_bits) {  // bf16 is a float's upper half: word i to word 2i + 1
  const __m512i to_upper_halves = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0,
                                                   6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
  return _mm512_castsi512_ps(
      _mm512_maskz_permutexvar_epi16(0xaaaaaaaa, to_upper_halves, _mm512_castsi256_si512(bf16_bits)));
}
template <class T>
[[gnu::always_inline]] inline F32x16 load_vec(const T* p) {
  if constexpr (std::is_same_v<T, bf16>)
    return widen16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  else if constexpr (std::is_same_v<T, f16>)  // vcvtph2ps: exact, subnormals included
    return _mm512_maskz_cvtph_ps(kAllLanes, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  else
    return _mm512_loadu_ps(p);
}
template <class T>
[[gnu::always_inline]] inline F32x16 load_vec(const T* p, int lanes) {
  const __mmask16 k = first_lanes(lanes);
  if constexpr (std::is_same_v<T, bf16>)
    return widen16(_mm256_maskz_loadu_epi16(k, p));
  else if constexpr (std::is_same_v<T, f16>)
    return _mm512_maskz_cvtph_ps(kAllLanes, _mm256_maskz_loadu_epi16(k, p));
  else
    return _mm512_maskz_loadu_ps(k, p);
}

// NOTE [bf16 maps by even and odd]
// Thirty-two bf16 values as two float vectors, the even-indexed and the odd-indexed: a bf16 is a float's
// upper half, so a shift and a mask widen them with no shuffle, and one vcvtne2ps2bf16 and one vpermw
// narrow them back in order, where load_vec and store_vec spend a vpermw and a vcvtneps2bf16 on each
// sixteen. The shuffles share their port with the tables' vpermps and vpermt2ps, which the exps and logs
// need, so maps whose functions use tables run faster by even and odd.
// For elementwise maps only (the lanes hold elements out of order). store_even_odd refuses (stores nothing)
// where a value is subnormal, which vcvtne2ps2bf16 flushes: the caller takes store_vec's path there.
struct EvenOdd16 {
  F32x16 even, odd;
};
inline EvenOdd16 load_even_odd(const bf16* p) {
  const __m512i v = _mm512_loadu_si512(p);
  return {F32x16{_mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAllLanes, v, 16))},
          F32x16{_mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(int(0xffff0000u))))}};
}
inline bool store_even_odd(bf16* p, F32x16 even, F32x16 odd) {
  if ((_mm512_fpclass_ps_mask(even.v, 0x20) | _mm512_fpclass_ps_mask(odd.v, 0x20)) != 0) return false;
  const __m512i in_order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23,
                                            7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i packed = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd.v, even.v));  // even, then odd
  _mm512_storeu_si512(p, _mm512_permutexvar_epi16(in_order, packed));
  return true;
}

// pairs[2x] and pairs[2x + 1] for sixteen 16-bit values x, from a table of 65,536 float pairs: two gathers
// of eight 8-byte entries (half the elements two tables' gathers load), split into the firsts and the
// seconds. The indices widen from two 8-value loads: GCC 12 warns on a 512-bit vector's halves.
template <class T>
[[gnu::always_inline]] inline std::array<F32x16, 2> gather_pair_vec(const float* pairs, const T* x,
                                                                    int lanes = 16) {
  static_assert(sizeof(T) == 2);
  const __mmask16 k = first_lanes(lanes);
  const __mmask8 k_low = __mmask8(k), k_high = __mmask8(k >> 8);
  const __m256i i_low = _mm256_maskz_cvtepu16_epi32(k_low, _mm_maskz_loadu_epi16(k_low, x));
  const __m256i i_high = _mm256_maskz_cvtepu16_epi32(k_high, _mm_maskz_loadu_epi16(k_high, x + 8));
  const __m512 low = _mm512_castpd_ps(_mm512_mask_i32gather_pd(_mm512_setzero_pd(), k_low, i_low, pairs, 8));
  const __m512 high =
      _mm512_castpd_ps(_mm512_mask_i32gather_pd(_mm512_setzero_pd(), k_high, i_high, pairs, 8));
  const __m512i firsts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i seconds = _mm512_add_epi32(firsts, _mm512_set1_epi32(1));
  return {F32x16{_mm512_permutex2var_ps(low, firsts, high)},
          F32x16{_mm512_permutex2var_ps(low, seconds, high)}};
}

// NOTE [native bf16 narrowing] (map_elements.h): vcvtneps2bf16 flushes subnormal inputs, so a group that
// holds one (vfpclassps, category 0x20) narrows lane by lane with dtype.h's integer rounding.
template <class T>
[[gnu::always_inline]] inline void store_vec(T* p, F32x16 v, int lanes = 16) {
  const __mmask16 k = first_lanes(lanes);
  if constexpr (std::is_same_v<T, bf16>) {
    if (_mm512_fpclass_ps_mask(v.v, 0x20) == 0) {
      _mm256_mask_storeu_epi16(p, k, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v.v)));
      return;
    }
    alignas(64) float f[16];
    _mm512_store_ps(f, v.v);
    for (int i = 0; i < lanes; ++i) p[i] = narrow<bf16>(f[i]);
  } else if constexpr (std::is_same_v<T, f16>) {  // vcvtps2ph: to nearest even, subnormals included
    _mm256_mask_storeu_epi16(p, k, _mm512_maskz_cvtps_ph(kAllLanes, v.v, _MM_FROUND_TO_NEAREST_INT));
  } else {
    _mm512_mask_storeu_ps(p, k, v.v);
  }
}

// A non-temporal store of sixteen floats to a 64-byte aligned p (NOTE [streaming large outputs]).
inline void stream_vec(float* p, F32x16 v) {
  _mm512_stream_ps(p, v.v);
}

// v with lanes `lanes` .. 15 set to 0.
inline F32x16 keep_first_lanes(F32x16 v, int lanes) {
  return _mm512_maskz_mov_ps(first_lanes(lanes), v.v);
}
// The larger of part and v lane by lane, part where v is NaN (so NaN elements are passed over); with
// `lanes`, only the first lanes of v count.
inline F32x16 max_skipping_nan(F32x16 part, F32x16 v) {
  return _mm512_mask_max_ps(part.v, kAllLanes, v.v, part.v);
}
inline F32x16 max_skipping_nan(F32x16 part, F32x16 v, int lanes) {
  return _mm512_mask_max_ps(part.v, first_lanes(lanes), v.v, part.v);
}
inline F32x16 min_skipping_nan(F32x16 part, F32x16 v) {  // as max_skipping_nan, the smaller
  return _mm512_mask_min_ps(part.v, kAllLanes, v.v, part.v);
}
inline F32x16 min_skipping_nan(F32x16 part, F32x16 v, int lanes) {
  return _mm512_mask_min_ps(part.v, first_lanes(lanes), v.v, part.v);
}

// v's lanes folded into one by halves (NOTE [across lanes by halves], across_lanes.h). (Both halves by the
// masked extract: GCC bug 105593.)
template <AcrossLanes Op>
[[gnu::always_inline]] inline float across_lanes(F32x16 v) {
  return across_lanes<Op>(fold_halves<Op>(_mm512_maskz_extractf32x8_ps(0xff, v.v, 0),
                                          _mm512_maskz_extractf32x8_ps(0xff, v.v, 1)));
}

// Lane i: lanes_sum(v[i]), each of the 16 folded by the same halves as lanes_sum (so bit for bit its
// result), the 16 folds sharing 30 shuffles where one at a time takes 16 x 7 steps. Each step adds two
// vectors that hold the lower and upper halves of four, then two, then one lane of every input; the
// inputs enter transposed (row i, column j of a 4 x 4 grid) so that the results come out in order. (The
// masked shuffles: GCC bug 105593, as above.)
inline F32x16 lanes_sums(const F32x16 (&v)[16]) {
  const auto input = [&](int k) { return v[(k % 4) * 4 + k / 4].v; };
  __m512 halves[8], quarters[4], pairs[2];
  for (int p = 0; p < 8; ++p) {
    const __m512 a = input(2 * p), b = input(2 * p + 1);
    halves[p] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(kAllLanes, a, b, 0x44),
                              _mm512_maskz_shuffle_f32x4(kAllLanes, a, b, 0xEE));
  }
  for (int q = 0; q < 4; ++q) {
    const __m512 a = halves[2 * q], b = halves[2 * q + 1];
    quarters[q] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(kAllLanes, a, b, 0x88),
                                _mm512_maskz_shuffle_f32x4(kAllLanes, a, b, 0xDD));
  }
  for (int r = 0; r < 2; ++r) {
    const __m512 a = quarters[2 * r], b = quarters[2 * r + 1];
    pairs[r] = _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], 0x88),
                       _mm512_shuffle_ps(pairs[0], pairs[1], 0xDD));
}

// The running sums of v's lanes (lane i: v[0] + ... + v[i]) by four shifted adds, and v's last lane in
// every lane: a row's prefix sums a vector at a time (cumsum).
inline F32x16 lane_prefix_sums(F32x16 v) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (int k = 1; k < 16; k *= 2)  // lanes >= k add the lane k below; the others add 0
    v = _mm512_add_ps(v.v, _mm512_maskz_permutexvar_ps(__mmask16(0xffffu << k),
                                                       _mm512_sub_epi32(lane, _mm512_set1_epi32(k)), v.v));
  return v;
}
inline F32x16 last_lane(F32x16 v) {
  return _mm512_maskz_permutexvar_ps(kAllLanes, _mm512_set1_epi32(15), v.v);
}

// Sums of floats widened to double, sixteen lanes in two registers.
struct DoubleLanes {
  __m512d low, high;
  DoubleLanes()
      : low(_mm512_setzero_pd()), high(_mm512_setzero_pd()) {}  // user-provided: inside the ISA region
  void add(F32x16 v) {
    low = _mm512_add_pd(low, _mm512_maskz_cvtps_pd(0xff, _mm512_maskz_extractf32x8_ps(0xff, v.v, 0)));
    high = _mm512_add_pd(high, _mm512_maskz_cvtps_pd(0xff, _mm512_maskz_extractf32x8_ps(0xff, v.v, 1)));
  }
  double total() const {  // across lanes in a fixed order
    alignas(64) double d[8];
    _mm512_store_pd(d, _mm512_add_pd(low, high));
    double s = 0;
    for (double x : d) s += x;
    return s;
  }
};

using FloatVec = F32x16;
using VecMask = Mask16;
inline constexpr int kVecWidth = 16;

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
#endif
