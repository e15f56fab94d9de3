// Branch-free float math that compilers vectorize: included inside a DEW_KERNEL_NS namespace (NOTE
// [kernel namespaces]), so each instruction set gets its own copy.
// exp_f32: float in, float out, float throughout, within 0.54 ulp and correctly rounded for 99.93% of
// every 97th float of its range (NOTE [compensated exp]); the gate holds it to libm's expf. The exps'
// scalar bodies read a 16-entry table, which GCC vectorizes only as lane-by-lane loads, so rows run on
// FloatVec's register lookup wherever the tier does; what still runs these bodies at length: bf16 rows on
// AVX-512 CPUs without AVX512-BF16 (rows_on_float_vec), strided unary rows, and the non-default attention
// tiers. NaN stays NaN. tanh_f32 and log_f32 compute in float with compensated steps (NOTE [f32 tanh in
// float], NOTE [f32 log in float]); the erf-GELU pair in float (NOTE [erf-GELU in float]).
#pragma once

#include <dew/dtype.h>
#include <array>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "ops/activation.h"
#include "simd/float_vec.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// The scalar overloads of the helpers FloatVec has (NOTE [one body for scalar and vector float
// functions]): the float functions below call only these, so F is float, F32x16 or F32x8 alike.
template <class F>
inline constexpr bool is_f32_like = std::is_same_v<F, float>
#if DEW_HAS_FLOAT_VEC
                                    || std::is_same_v<F, FloatVec>
#endif
    ;
template <class F>
requires std::is_floating_point_v<F>
[[gnu::always_inline]] inline F mul_add(F a, F b, F c) {
  return std::fma(a, b, c);
}
template <class F>
requires std::is_floating_point_v<F>
[[gnu::always_inline]] inline F select(bool c, F a, F b) {
  return c ? a : b;
}
[[gnu::always_inline]] inline float magnitude(float a) {
  return std::fabs(a);
}
[[gnu::always_inline]] inline float with_sign_of(float m, float sign) {
  return std::copysign(m, sign);
}
[[gnu::always_inline]] inline float clamp_keep_nan(float x, float lo, float hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
[[gnu::always_inline]] inline float at_most_keep_nan(float x, float hi) {  // min(x, hi); NaN stays NaN
  return x > hi ? hi : x;
}
[[gnu::always_inline]] inline float at_least_keep_nan(float x, float lo) {  // max(x, lo); NaN stays NaN
  return x < lo ? lo : x;
}
// table[i & 15] for the integer i in the low bits of a float's bits (F32x16 and F32x8 permute a register).
[[gnu::always_inline]] inline float lookup16(const float* table, float i) {
  return table[std::bit_cast<uint32_t>(i) & 15];
}
// table[i & 31] likewise (F32x16 permutes two registers).
[[gnu::always_inline]] inline float lookup32(const float* table, float i) {
  return table[std::bit_cast<uint32_t>(i) & 31];
}
// y - floor(32 y) / 32 rounded down, as vreduceps rounds it (exact but for y in (-1/32, 0)), and a float
// whose low five bits hold floor(32 y) mod 32 for lookup32 (F32x16: y + 1.5 2^18 rounded down); y in
// [-151, 129] or NaN.
[[gnu::always_inline]] inline float below_thirty_seconds(float y) {
  const double exact = double(y) - std::floor(32.0 * double(y)) / 32;  // exact in double
  const float nearest = float(exact);
  return double(nearest) > exact ? std::nextafter(nearest, -1.0f) : nearest;
}
[[gnu::always_inline]] inline float thirty_seconds_index(float y) {
  return y == y ? std::bit_cast<float>(int32_t(std::floor(32.0f * y))) : 0.0f;
}
// y 2^n for integral n in [-151, 128], rounded once: two factors, so a subnormal result rounds only in
// the second product.
[[gnu::always_inline]] inline float times_pow2(float y, float n) {
  const int32_t ni = int32_t(n), n1 = ni >> 1, n2 = ni - n1;
  return y * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((n2 + 127) << 23);
}

// y 2^floor(q) for q in [-151, 129).
[[gnu::always_inline]] inline float times_pow2_floor(float y, float q) {
  return times_pow2(y, std::floor(q));
}

// ln 2 = 0.693359375 + kLn2Low, the first of 9 bits, so that k times it is exact (log_f32's k ln 2).
inline constexpr float kLn2Low = 2.12194440e-4f;

// 2^(j/16) for j = 0..15 rounded once, and what that rounding left (NOTE [exp by sixteenths]).
inline constexpr float kExp2Sixteenths[16] = {0x1p+0f,        0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f,
                                              0x1.306fe0p+0f, 0x1.3dea64p+0f, 0x1.4bfdaep+0f, 0x1.5ab07ep+0f,
                                              0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f,
                                              0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f};
inline constexpr float kExp2SixteenthsLow[16] = {
    0x0p+0f,          0x1.9f3122p-25f,  -0x1.c15742p-27f, 0x1.ceac48p-25f, 0x1.4636e2p-25f, 0x1.824684p-25f,
    -0x1.593abcp-25f, -0x1.5bd5ecp-27f, 0x1.9fcef4p-26f,  -0x1.829fdp-25f, 0x1.15506ep-27f, 0x1.51f848p-27f,
    -0x1.a94b14p-26f, -0x1.3d56b2p-27f, -0x1.822dbcp-27f, 0x1.52486cp-27f};

// kExp2SixteenthsLow halved (exactly): tanh_rounding_to's correction of P - 1.
inline constexpr auto kExp2SixteenthsHalfLow = [] {
  std::array<float, 16> h{};
  for (size_t j = 0; j < 16; ++j) h[j] = kExp2SixteenthsLow[j] / 2;
  return h;
}();

// exp's reduction by sixteenths (NOTE [exp by sixteenths]): x (with Clamp, clamped to exp's range, NaN
// kept; without, known to lie in it) = q ln 2 + r with q = round(16 x / ln 2) / 16 and |r| <= ln 2 / 32.
// At 1.5 2^19 a float's ulp is 1/16, so `shifted` holds q's sixteenths j in its low bits (lookup16's
// index) and floor(q) + 0x04940000 in the bits above them; x - q ln2_hi is exact.
// What x is to the reduction: e's exponent; 2's (2^x: q = round(16 x) / 16 and r = (x - q) ln 2, x - q
// exact); or e's exponent known to be <= 0 or NaN (x - max in softmax, logsumexp, cross_entropy) in
// results that round to bf16 or f16: clamped below only, and r = x - q ln2_hi without ln 2's low part,
// which moves exp(x) by |q| 2^-29 relative (2^-21.6 at x = -104, where e^x is 2^-150 of the largest
// term), far below their rounding (2^-9, 2^-12). Two instructions fewer of about twelve.
enum class ExpOf { e, two, e_nonpositive };
template <class F>
struct ExpSixteenths {
  F shifted, q, r;
};
template <bool Clamp, ExpOf Of, class F>
[[gnu::always_inline]] inline ExpSixteenths<F> exp_sixteenths(F x) {
  if constexpr (Clamp) {  // the results round to 0 below and to inf above these
    if constexpr (Of == ExpOf::two)
      x = clamp_keep_nan(x, -151.0f, 129.0f);
    else if constexpr (Of == ExpOf::e_nonpositive)
      x = at_least_keep_nan(x, -104.0f);
    else
      x = clamp_keep_nan(x, -104.0f, 89.0f);
  }
  if constexpr (Of == ExpOf::two) {
    const F shifted = x + F(0x1.8p19f), q = shifted - F(0x1.8p19f);
    return {shifted, q, (x - q) * F(0x1.62e43p-1f)};
  }
  const F shifted = mul_add(x, F(0x1.715476p+0f), F(0x1.8p19f));
  const F q = shifted - F(0x1.8p19f), r_high = mul_add(q, F(-0x1.62e43p-1f), x);  // exact
  if constexpr (Of == ExpOf::e_nonpositive) return {shifted, q, r_high};
  return {shifted, q, mul_add(q, F(0x1.05c61p-29f), r_high)};
}

// NOTE [exp's normal range on F32x8]
// AVX2 has no vscalefps: 2^floor(q) takes two factors (ten instructions, so that a subnormal result
// rounds once), which with the clamp was a third of exp_f32 on F32x8. Where every lane of a vector lies
// in [-86, 87] (results normal; NaN fails the test) the clamp is skipped and floor(q), already in
// `shifted`'s bits, is added to y's exponent field: three instructions, the same bits. Other vectors
// take the general path. F32x8 says so by its overloads of all_lanes_within and times_pow2_floor_bits.
template <class F>
concept scales_by_exponent_bits = requires(F v) {
  { all_lanes_within(v, 0.0f, 0.0f) } -> std::same_as<bool>;
  { times_pow2_floor_bits(v, v) } -> std::same_as<F>;  // not float through F32x8's converting constructor
};
inline constexpr float kExpNormalLow = -86.0f, kExpNormalHigh = 87.0f;
inline constexpr float kExp2NormalLow = -124.0f, kExp2NormalHigh = 125.0f;  // the same range, base 2

// exp_f32's and exp_f32_within_2ulp's shared frame: reduce x, y = body(t index `shifted`, r) (so that
// y = 2^(j/16) exp(r), in [0.97, 2.05)), then y 2^floor(q); Clamp as exp_sixteenths (false: the
// exponent-bits path, which exp_by_sixteenths takes only for vectors within the normal range).
template <bool Clamp, ExpOf Of, class F, class Body>
[[gnu::always_inline]] inline F exp_sixteenths_path(F x, Body body) {
  const auto [shifted, q, r] = exp_sixteenths<Clamp, Of>(x);
  const F y = body(shifted, r);
  if constexpr (Clamp)
    return times_pow2_floor(y, q);
  else
    return times_pow2_floor_bits(y, shifted);
}
template <ExpOf Of = ExpOf::e, class F, class Body>
[[gnu::always_inline]] inline F exp_by_sixteenths(F x, Body body) {
  constexpr bool two = Of == ExpOf::two;
  if constexpr (scales_by_exponent_bits<F>)  // NOTE [exp's normal range on F32x8]
    if (all_lanes_within(x, two ? kExp2NormalLow : kExpNormalLow, two ? kExp2NormalHigh : kExpNormalHigh))
      return exp_sixteenths_path<false, Of>(x, body);
  return exp_sixteenths_path<true, Of>(x, body);
}

// NOTE [compensated exp]
// exp_f32: by sixteenths (NOTE [exp by sixteenths]) with what the two short forms round away kept:
// exp(r) - 1 = p to r^4 (r^5 / 120 < 2^-34), 2^(j/16) = t + t_lo, and exp(x) = 2^floor(q) (t + (t p +
// t_lo)), the small term rounded first and the sum once. r's rounding (|r| 2^-24) and the small term's
// (2^-29) move it by 0.03 ulp at most, so the last rounding's half ulp is nearly all of its error.
// 2^floor(q) through times_pow2_floor (vscalefps, or two factors): a subnormal result rounds a second
// time there, so it is within 1 of its ulp (2^-149) rather than 0.54.
template <class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F exp_f32(F x) {
  return exp_by_sixteenths(
      x, [](F shifted, F r) __attribute__((always_inline)) {
        const F t = lookup16(kExp2Sixteenths, shifted), t_lo = lookup16(kExp2SixteenthsLow, shifted);
        const F p = mul_add(r * r, mul_add(mul_add(r, F(0x1.555556p-5f), F(0x1.555556p-3f)), r, F(0.5f)), r);
        return t + mul_add(t, p, t_lo);
      });
}

// NOTE [exp by sixteenths]
// exp_f32_within_2ulp: exp(x) = 2^floor(q) 2^(j/16) exp(r), q = round(16 x / ln 2) / 16 with j its
// sixteenths and r = x - q ln 2 (|r| <= ln 2 / 32; the first product exact, ln 2's low part added), 2^(j/16)
// from a register (one vpermps on AVX-512), exp(r) - 1 by Taylor to r^3 (r^4 / 24 < 2^-26), so
// 2^(j/16) (1 + s) takes one rounding. Within 1.06 ulp (0.16 RMS) over every 97th float of [-104, 89],
// as Cephes' degree-6 form, in 12 vector operations where that takes 15, which the bf16 cross_entropy
// and attention's softmax rows are bound by. For kernels whose own rounding dwarfs it (attention: a
// score carries gamma_D sum |q k|; bf16 gradients); exp_f32 is the one the gate holds to libm. Always
// inlined: an outlined copy, called per score, keeps the softmax loops scalar.
template <ExpOf Of = ExpOf::e, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F exp_f32_within_2ulp(F x) {
  return exp_by_sixteenths<Of>(
      x, [](F shifted, F r) __attribute__((always_inline)) {
        const F t = lookup16(kExp2Sixteenths, shifted);                         // 2^(j/16)
        const F s = mul_add(r * r, mul_add(r, F(0x1.555556p-3f), F(0.5f)), r);  // exp(r) - 1 to r^3
        return mul_add(t, s, t);
      });
}

// The exp of a kernel whose results round to T: exp_f32 for f32 (and wider); for bf16 and f16, whose
// rounding (2^-9, 2^-11) dwarfs one or two float ulps, exp_f32_within_2ulp, a third fewer operations.
template <class T, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F exp_rounding_to(F x) {
  if constexpr (is_half_type<T>)
    return exp_f32_within_2ulp(x);
  else
    return exp_f32(x);
}
// NOTE [exps of x <= 0 by thirty-seconds]
// On the avx512 tier, whose vpermt2ps reads a 32-entry table from two registers in one instruction,
// exp_nonpositive_rounding_to's bf16 and f16 form goes by thirty-seconds of log2: exp(x) = 2^y, y = x / ln 2
// rounded once (for exp(a - m), y = a / ln 2 - m / ln 2 by one fma, the subtraction folded in), y =
// floor(32 y) / 32 + f with f in [0, 1/32) by one vreduceps (exact), 2^(j/32) for j = floor(32 y) mod 32
// from the table (indexed by y + 1.5 2^18 rounded down, where a float's ulp is 1/32), 2^f = 1 + s with s
// the degree-2 minimax on [0, 1/32] (tools/fit_exp2_thirty_seconds.py: 2^-24.2 relative), and 2^floor(y)
// by vscalefps, which floors y itself: eight vector operations, seven with the subtraction, where the
// reduction in ln 2 it replaced took nine and ten. No clamp: below y = -2^17 (and at -inf) f is 0 and
// 2^floor(y) flushes the result to 0; NaN stays NaN. Within 2 float ulps plus (1.25 |x| + |m|) 2^-24
// relative from y's roundings (checked over the floats: tests/ops/float_vec_checks.h): at x = -17, where
// f16's results end, 2^-19.6, under 1/300 of f16's unit roundoff. |m| 2^-24 is common to a row's exps:
// logsumexp's m + log s, rounded to bf16 or f16, does not see it, but a result that holds log s alone
// (log_softmax, cross_entropy's f32 loss) would (the gate's large_logits rows: RMS ratio 1.8 at |m| near
// 90), so those subtract first. The other tiers keep sixteenths (a 32-entry lookup there takes four
// vpermps).
inline constexpr float kExp2ThirtySeconds[32] = {
    0x1p+0f,        0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f, 0x1.172b84p+0f, 0x1.1d4874p+0f,
    0x1.2387a6p+0f, 0x1.29e9ep+0f,  0x1.306fep+0f,  0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f,
    0x1.4bfdaep+0f, 0x1.5342b6p+0f, 0x1.5ab07ep+0f, 0x1.6247ecp+0f, 0x1.6a09e6p+0f, 0x1.71f75ep+0f,
    0x1.7a1148p+0f, 0x1.82589ap+0f, 0x1.8ace54p+0f, 0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f,
    0x1.ae89fap+0f, 0x1.b7f77p+0f,  0x1.c199bep+0f, 0x1.cb720ep+0f, 0x1.d5818ep+0f, 0x1.dfc974p+0f,
    0x1.ea4afap+0f, 0x1.f50766p+0f};
inline constexpr double kInverseLn2 = 1.44269504088896340736;

// 2^y by thirty-seconds (NOTE [exps of x <= 0 by thirty-seconds]), on the avx512 tier for results that
// round to bf16 or f16: within 2 float ulps (y exact), 0 below -150 and inf from 128, NaN kept.
template <class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F exp2_by_thirty_seconds(F y) {
  if constexpr (std::is_same_v<F, float>) y = clamp_keep_nan(y, -151.0f, 129.0f);  // times_pow2_floor's range
  const F f = below_thirty_seconds(y), t = lookup32(kExp2ThirtySeconds, thirty_seconds_index(y));
  const F s = mul_add(f, mul_add(f, F(0x1.f1566cp-3f), F(0x1.62e02cp-1f)), F(0x1.c6afeap-25f));
  return times_pow2_floor(mul_add(t, s, t), y);
}

// exp_rounding_to for x <= 0 (or NaN): x - max in softmax and cross_entropy, -|z| in the sigmoids. For bf16
// and f16 the reduction of ExpOf::e_nonpositive (exp_sixteenths, shorter than exp_rounding_to's), by
// thirty-seconds on the avx512 tier (NOTE [exps of x <= 0 by thirty-seconds]).
template <class T, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F exp_nonpositive_rounding_to(F x) {
  if constexpr (is_half_type<T> && kLanes == 16)
    return exp2_by_thirty_seconds(x * F(float(kInverseLn2)));
  else if constexpr (is_half_type<T>)
    return exp_f32_within_2ulp<ExpOf::e_nonpositive>(x);
  else
    return exp_f32(x);
}
// exp(a - m) for a <= m (or NaN), m finite, where the result rounds to T with m (logsumexp's exps): on
// the avx512 tier the subtraction folds into the scaling by 1 / ln 2 (m's product hoists out of a row's
// loop; NOTE [exps of x <= 0 by thirty-seconds]).
template <class T, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F exp_nonpositive_rounding_to(F a, F m) {
  if constexpr (is_half_type<T> && kLanes == 16)
    return exp2_by_thirty_seconds(mul_add(a, F(float(kInverseLn2)), -(m * F(float(kInverseLn2)))));
  else
    return exp_nonpositive_rounding_to<T>(a - m);
}

// 2^x for results that round to bf16 or f16, for kernels that hold an exponent of 2 (pow's b log2 a):
// by thirty-seconds on the avx512 tier, elsewhere exp_f32_within_2ulp's reduction in base 2
// (exp_sixteenths, one multiplication and two fmas fewer than its exp).
template <class T, class F>
requires is_f32_like<F> && is_half_type<T>
[[gnu::always_inline]] inline F exp2_rounding_to(F x) {
  if constexpr (kLanes == 16)
    return exp2_by_thirty_seconds(x);
  else
    return exp_f32_within_2ulp<ExpOf::two>(x);
}

// num sigmoid(z): activation.h's times_sigmoid for f32 results; for results that round to bf16 or f16,
// num e' / (1 + e) with e = exp(-|z|) (exp_nonpositive_rounding_to: no overflow, no branch of the tail)
// and e' = e below 0, 1 above: two operations fewer than the f32 form's 18.
template <class T = float, class F>
[[gnu::always_inline]] inline F times_sigmoid_f32(F num, F z) {
  if constexpr (is_half_type<T>) {
    const F e = exp_nonpositive_rounding_to<T>(-magnitude(z));
    return num * select(z < F(0.0f), e, F(1.0f)) / (F(1.0f) + e);
  } else {
    const auto tail = z < F(-80.0f);
    const F e = exp_rounding_to<T>(select(tail, z, -z));
    return select(tail, num * e, num / (F(1.0f) + e));
  }
}

// sigmoid(z) and sigmoid(-z), from one exp that cannot overflow, e = exp(-|z|):
// 1 / (1 + e) and e / (1 + e), one division. NaN stays NaN. T: the dtype the results feed (the exp's
// form, exp_nonpositive_rounding_to).
template <class F>
struct SigmoidPair {
  F s, s_neg;
};
template <class T = float, class F>
[[gnu::always_inline]] inline SigmoidPair<F> sigmoid_pair_f32(F z) {
  const F e = exp_nonpositive_rounding_to<T>(-magnitude(z)), large = F(1.0f) / (F(1.0f) + e),
          small = e * large;
  const auto positive = z > F(0.0f);
  return {select(positive, large, small), select(positive, small, large)};
}

// c[0] + x (c[1] + x (... + x c[N-1])), unrolled at compile time: a loop over the coefficients would
// keep the loops these functions sit in from vectorizing.
template <class F, class C, size_t N, size_t... I>
[[gnu::always_inline]] inline F horner_unrolled(F x, const std::array<C, N>& c, std::index_sequence<I...>) {
  F p = F(c[N - 1]);
  ((p = mul_add(p, x, F(c[N - 2 - I]))), ...);
  return p;
}
template <class F, class C, size_t N>
[[gnu::always_inline]] inline F horner(F x, const std::array<C, N>& c) {
  return horner_unrolled(x, c, std::make_index_sequence<N - 1>{});
}

// 1 / (2k + 3) for k = 0..4: atanh(s) = s + s^3 sum_k s^2k / (2k + 3), to s^11. On |s| <= 0.172 (the
// logs below) the next term is 5e-11 of s.
inline constexpr auto kAtanhSeriesF32 = [] {
  std::array<float, 5> c{};
  for (size_t k = 0; k < 5; ++k) c[k] = 1.0f / float(2 * k + 3);
  return c;
}();

// NOTE [f32 tanh in float]
// tanh(x) for f32 results, in float: below |x| = 0.625 Cephes' odd polynomial x + x^3 P(x^2) (P of degree
// 4), from there 1 - 2 / (exp(2a) + 1) with a = |x| clamped at 9.1 (past 9.01 tanh rounds to 1) and
// exp_f32_within_2ulp (tanh >= 0.55 there, so the subtraction loses at most a bit), both on every lane and
// one selected: about 28 vector operations with one division. Over the floats in (0, 9.2]: at most 1.36
// ulp; over N(0, 2) draws its RMS error is 0.80 of libm's tanhf (the portable path, at most 2.17 ulp).
// A compensated form (E / (E + 2), E = expm1(2a)) is more accurate but takes about 45 operations and two
// divisions, which leaves the row bound by arithmetic instead of memory.
template <class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F tanh_f32(F x) {
  const F a = at_most_keep_nan(magnitude(x), 9.1f), z = x * x;
  F p = mul_add(F(-5.70498872745e-3f), z, F(2.06390887954e-2f));
  p = mul_add(p, z, F(-5.37397155531e-2f));
  p = mul_add(p, z, F(1.33314422036e-1f));
  p = mul_add(p, z, F(-3.33332819422e-1f));
  const F near_zero = mul_add(p * z, a, a);  // of |x|: x's sign set last, -0 kept
  const F away = F(1.0f) - F(2.0f) / (exp_f32_within_2ulp(a + a) + F(1.0f));
  return with_sign_of(select(a < F(0.625f), near_zero, away), x);
}

// NOTE [tanh of results that round to bf16 or f16]
// tanh(a) = E / (E + 2), E = expm1(2a), a = |x| clamped at 9.1, as tanh_f32 but without its compensated
// steps, whose few hundredths of an ulp bf16 and f16 (2^-9, 2^-12) cannot see: exp's reduction by
// sixteenths (NOTE [exp by sixteenths]) of 2a = q ln 2 + 2h, written in h = a - q ln2_hi / 2 (exact;
// ln 2's low part moves the result by |q| 2^-29 <= 2^-24 relative), exp(2a) = P (1 + s) with P =
// 2^(j/16) 2^floor(q) and s/2 = h + h^2 (1 + 2h/3) (expm1 to r^3, r = 2h), then E/2 = (P - 1)/2 + P s/2
// and tanh = (E/2) / (E/2 + 1). P - 1 is exact where E is small (P in [1, 2]: Sterbenz), so nothing
// cancels near 0 and tanh keeps its relative accuracy down to the subnormals; but P - 1 carries the
// table's rounding of 2^(j/16) (2^-24 of P) at 1/(P - 1) times (23 at j = 1: 2^-19.5 relative, which
// rounded f16 results near a midpoint the wrong way), so 2^(j/16)'s low part joins s/2, halved. 17
// vector operations with one division: cheaper than a 16-entry gather from a table of results.
template <class T, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F tanh_rounding_to(F x) {
  if constexpr (is_half_type<T>) {
    const F a = at_most_keep_nan(magnitude(x), 9.1f);                          // tanh rounds to 1 past 9.01
    const F shifted = mul_add(a, F(2 * 0x1.715476p+0f), F(0x1.8p19f));         // 2a / ln 2 to sixteenths
    const F q = shifted - F(0x1.8p19f), h = mul_add(q, F(-0x1.62e43p-2f), a);  // exact
    const F p = times_pow2_floor(lookup16(kExp2Sixteenths, shifted), q);
    const F h_and_low = h + lookup16(kExp2SixteenthsHalfLow.data(), shifted);  // 2^(j/16)'s low part / 2
    const F half_s = mul_add(h * h, mul_add(h, F(0x1.555556p-1f), F(1.0f)), h_and_low);
    const F half_e = mul_add(p, half_s, mul_add(p, F(0.5f), F(-0.5f)));
    return with_sign_of(half_e / (half_e + F(1.0f)), x);
  } else {
    return tanh_f32(x);
  }
}

// x = 2^k m with m in [1, 2), for finite x > 0 (subnormals scaled into the normals first); m and k as
// floats. F32x16 has the same (vgetmantps, vgetexpps), F32x8 the same operations on its lanes.
struct ExponentSplit {
  float m, k;
};
[[gnu::always_inline]] inline ExponentSplit split_exponent(float x) {
  const bool tiny = x < 0x1p-126f;
  const int32_t b = std::bit_cast<int32_t>(tiny ? x * 0x1p24f : x);
  return {std::bit_cast<float>((b & 0x007fffff) | 0x3f800000),
          float(((b >> 23) & 0xff) - 127 - (tiny ? 24 : 0))};
}

// log's special values over the series' result: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN
// stays NaN. (F32x16 has its own, shorter: vgetmantps and vgetexpps give most of these already; F32x8's
// is this one on its lanes.)
[[gnu::always_inline]] inline float log_special_values(float x, float series) {
  const float inf = std::numeric_limits<float>::infinity();
  const float special =
      select(x == 0.0f, -inf, select(x == inf, inf, std::numeric_limits<float>::quiet_NaN()));
  return select(x > 0.0f && x < inf, series, special);  // selects, not branches: loops vectorize
}

// log's reduction: x = 2^k m with m in [sqrt(1/2), sqrt(2)), subnormals scaled into the normals first
// (split_exponent); both logs below start from it.
template <class F>
struct LogArgument {
  F m, k;
};
template <class F>
[[gnu::always_inline]] inline LogArgument<F> log_argument(F x) {
  const auto [m0, k0] = split_exponent(x);  // x = 2^k m, m in [1, 2)
  const auto high = m0 > F(1.41421356237f);
  return {select(high, F(0.5f) * m0, m0), select(high, k0 + F(1.0f), k0)};
}

// NOTE [logs by sixteenths]
// log a for a in (0, inf) within a few float ulps, for results that round to bf16 or f16 (the logs of
// bf16 and f16 pow, and the unary log): a = 2^k m with m in [3/4, 3/2) (log_argument_by_sixteenths),
// c = j/16 the sixteenth nearest m (j in m + 1.5 2^19's low bits, where a float's ulp is 1/16), r =
// m (1/c) - 1 by one fma (|r| < 0.046), log(1 + r) to r^5 (r^6 / 6 < 2^-24 of it), log c from a table.
// 1/c is exactly 1 at j = 16, so the log of a near 1 is log(1 + r) with r exact: accurate relative to
// itself. No division, where the atanh series has one. The tables hold j = 12..24 at
// j mod 16: 16/j rounded to float, and -log2 and -ln of that float, each rounded once from long double
// (checked by a test).
inline constexpr float kInverseSixteenths[16] = {
    0x1p+0f,        0x1.e1e1e2p-1f, 0x1.c71c72p-1f, 0x1.af286cp-1f, 0x1.99999ap-1f, 0x1.861862p-1f,
    0x1.745d18p-1f, 0x1.642c86p-1f, 0x1.555556p-1f, 0.0f,           0.0f,           0.0f,
    0x1.555556p+0f, 0x1.3b13b2p+0f, 0x1.24924ap+0f, 0x1.111112p+0f};
inline constexpr float kLog2Sixteenths[16] = {
    0.0f,           0x1.663f6ep-4f, 0x1.5c01a2p-3f,  0x1.fbc16ap-3f,  0x1.49a784p-2f,
    0x1.91bba6p-2f, 0x1.d6753cp-2f, 0x1.0c105p-1f,   0x1.2b8034p-1f,  0.0f,
    0.0f,           0.0f,           -0x1.a8ff9ap-2f, -0x1.32bff2p-2f, -0x1.8a898ap-3f,
    -0x1.7d605ep-4f};
inline constexpr float kLnSixteenths[16] = {
    0.0f,           0x1.f0a30ap-5f, 0x1.e27074p-4f,  0x1.5ff306p-3f,  0x1.c8ff7ap-3f,
    0x1.1675cap-2f, 0x1.4618bap-2f, 0x1.739d7ep-2f,  0x1.9f323cp-2f,  0.0f,
    0.0f,           0.0f,           -0x1.269624p-2f, -0x1.a93ed8p-3f, -0x1.1178eep-3f,
    -0x1.08599ap-4f};

// a = 2^k m with m in [3/4, 3/2) for a in (0, inf): on AVX-512 vgetmantps and vgetexpps (four
// instructions; a < 0 or NaN gives m NaN, inf gives k inf, 0 gives k -inf), elsewhere the same m and k
// from split_exponent's (so that a strided row's scalar body and a vector give the same values).
template <class F>
[[gnu::always_inline]] inline LogArgument<F> log_argument_by_sixteenths(F a) {
#if DEW_HAS_F32X16
  if constexpr (std::is_same_v<F, F32x16>) {
    const __m512 m = _mm512_maskz_getmant_ps(kAllLanes, a.v, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_nan);
    const __m512 k = _mm512_maskz_getexp_ps(kAllLanes, a.v);
    const __mmask16 below_one = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.0f), _CMP_LT_OQ);
    return {m, _mm512_mask_add_ps(k, below_one, k, _mm512_set1_ps(1.0f))};
  }
#endif
  const auto [m0, k0] = split_exponent(a);   // a = 2^k m, m in [1, 2)
  const auto high = m0 > F(0x1.7ffffep+0f);  // m0 >= 1.5
  return {select(high, F(0.5f) * m0, m0), select(high, k0 + F(1.0f), k0)};
}

// log a (LogBase::e) or log2 a, for a in (0, inf) (NOTE [logs by sixteenths]).
enum class LogBase { e, two };
template <LogBase Base, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F log_by_sixteenths(F a) {
  const auto [m, k] = log_argument_by_sixteenths(a);
  const F shifted = m + F(0x1.8p19f);
  const F r = mul_add(m, lookup16(kInverseSixteenths, shifted), F(-1.0f)), r2 = r * r;
  constexpr double s = Base == LogBase::e ? 1.0 : kInverseLn2;  // log(1 + r) times s
  constexpr float c1 = float(s), c2 = float(-s / 2), c3 = float(s / 3), c4 = float(-s / 4), c5 = float(s / 5);
  const F series = mul_add(mul_add(mul_add(r, F(c5), F(c4)), r, F(c3)), r2, mul_add(r, F(c2), F(c1)));
  const F log_m = mul_add(r, series, lookup16(Base == LogBase::e ? kLnSixteenths : kLog2Sixteenths, shifted));
  if constexpr (Base == LogBase::e)
    return mul_add(k, F(0x1.62e43p-1f), log_m);
  else
    return k + log_m;
}

// NOTE [f32 log in float]
// log(x) = k ln 2 + 2 atanh(s), s = f / (2 + f), f = m - 1 (exact), in float with the roundings that
// matter compensated, so it rounds nearly always correctly as a double evaluation would, on twice the
// lanes: 2 + f = d + d_lo
// exactly (Fast2Sum), s's division remainder f - s d is exact (fma) and gives s_lo, k ln 2 = k c1 +
// k c2 with c1 of 9 bits (k c1 exact) added to 2s by Fast2Sum (|k c1| >= 0.69 > |2s| where k != 0),
// and everything small (the error terms, k c2, 2 s_lo, the series' tail) summed before the one last
// rounding. The tail 2 s^3 (1/3 + s^2/5 + ... + s^8/11) on |s| <= 0.172 leaves 5e-11 of the result
// (doubling kAtanhSeriesF32's coefficients is exact, so 2 horner(...) is horner of the doubled series).
template <class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F log_f32(F x) {
  const auto [m, k] = log_argument(x);
  const F f = m - F(1.0f);                            // exact: m in [0.707, 1.415)
  const F d = F(2.0f) + f, d_lo = f - (d - F(2.0f));  // 2 + f, exactly
  const F s = f / d;
  const F s_lo = (mul_add(-s, d, f) - s * d_lo) / d;  // f / (2 + f) - s, to a relative 2^-24
  const F s2 = s * s;
  const F a = k * F(0.693359375f), b = F(2.0f) * s;  // k c1 exact; ln 2 = c1 + c2
  const F sum = a + b, err = (a - sum) + b;          // Fast2Sum (a = 0 where k = 0)
  const F small =
      mul_add(k, F(-kLn2Low), mul_add(s * s2, F(2.0f) * horner(s2, kAtanhSeriesF32), F(2.0f) * s_lo));
  const F series = sum + (err + small);
  return select(x == F(std::numeric_limits<float>::infinity()), x, log_special_values(x, series));
}

// log for results that round to bf16 or f16: log_by_sixteenths, its special values as log_f32's (log 0 =
// -inf, log x = NaN below 0, log inf = inf); f32 results take log_f32.
template <class T, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F log_rounding_to(F x) {
  if constexpr (is_half_type<T>)
    return select(x == F(std::numeric_limits<float>::infinity()), x,
                  log_special_values(x, log_by_sixteenths<LogBase::e>(x)));
  else
    return log_f32(x);
}

// erfcx(a) = exp(a^2) erfc(a) = t Q(t), t = 1 / (1 + a / 2) (the variable of Numerical Recipes' erfcc):
// Q is smooth on t in [1/7, 1], a in [0, 12] (past 12, exp(-a^2) underflows), between 0.28 and 1;
// tools/fit_erfcx.py fits it in powers of t, well conditioned there: within 2.8e-9 in 11 terms.
inline constexpr std::array<float, 11> kErfcxOverT = {0.282090419557f,    0.282210588205f,  0.245569088249f,
                                                      0.183564069288f,    0.0614309562271f, 0.0216961306677f,
                                                      -0.00310953343145f, -0.306404033933f, 0.390700530184f,
                                                      -0.193876962561f,   0.0361287502403f};

// NOTE [erf-GELU in float]
// 1 + erf(x / sqrt 2) and the gaussian exp(-x^2 / 2), in float, for f32 results (bf16 and f16 ones: NOTE
// [erf-GELU for bf16 and f16 results]; the GLUs' bf16 and f16 gates go by table: NOTE [bf16 gates by table]):
// erfc(a) = exp(-a^2) erfcx(a) for a = |x| / sqrt 2, then erfc(a) below 0 (no cancellation: the GELU's
// negative tail keeps its relative accuracy down to where it underflows) and 2 - erfc(a) above. One
// division and one exp, shared with the derivative's gaussian. -x^2 / 2 enters the exp
// as an exact sum hi + lo (its rounding would cost up to x^2/2 ulps: 18 at x = 6) and the exp is
// exp_f32. The rest rounds about eight times: f32 GELU lies within 6 ulps (RMS 1.2) below |x| = 2 and
// within 1 ulp past it, where the gate's RMS ratio is decided: 0.9-1.1 against the portable path's libm
// erff, whose 1 + erf cancels in the negative tail where this form does not. A double evaluation would
// round once, at well under half the speed.
template <class F>
struct OnePlusErf {
  F value, gaussian;
};
template <class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline OnePlusErf<F> one_plus_erf_f32(F x) {
  // -x^2/2 = hi + lo exactly, and exp(hi + lo) = exp(hi) (1 + lo). lo is NaN where x^2 overflows
  // (|x| past 1.8e19, where exp(hi) is 0): set to 0 there. (Clamping |x| instead kept GCC from
  // vectorizing the scalar body: "control flow in loop".)
  const F a = magnitude(x);
  const F t = F(1.0f) / mul_add(a, F(0.35355339059327376220f), F(1.0f));  // 1 / (1 + a / (2 sqrt 2))
  const F hi = a * a * F(-0.5f), lo = mul_add(a, a, F(2.0f) * hi) * F(-0.5f), e = exp_f32(hi);
  const F gaussian = mul_add(e, select(a < F(1e19f), lo, F(0.0f)), e), q = horner(t, kErfcxOverT);
  const F erfc_a = gaussian * (t * q);
  return {select(x < F(0.0f), erfc_a, F(2.0f) - erfc_a), gaussian};
}

// GELU (erf form), 0.5 x (1 + erf(x / sqrt 2)), and its derivative Phi(x) + x phi(x), in float
// (NOTE [erf-GELU in float]).
template <class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F gelu_erf_f32(F x) {
  return F(0.5f) * x * one_plus_erf_f32(x).value;
}
template <class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F gelu_erf_derivative_f32(F x) {
  const OnePlusErf<F> e = one_plus_erf_f32(x);
  return F(0.5f) * e.value + x * F(0.39894228040143267794f) * e.gaussian;
}

// NOTE [erf-GELU for bf16 and f16 results]
// x Phi(x) = x (1 - h) for x >= 0 and x h below, h = erfc(a) / 2 = exp(-x^2 / 2) t Q(t) / 2 (a = |x| /
// sqrt 2, t and Q as kErfcxOverT's). Where results round to bf16 or f16 the f32 form's care is not
// needed: -x^2 / 2 rounds (x^2 2^-24 relative in the exp: 2^-17.5 at x = -13, where bf16's results
// underflow), the exp is exp_nonpositive_rounding_to's (on the avx512 tier with -1 / (2 ln 2) folded
// into its scaling), and Q/2 is a fit on t in [0.17, 1] (tools/fit_erfcx.py): for bf16 kHalfErfcxOverT,
// 7 terms (2^-18.1 relative), about 24 vector operations and one division where the f32 form takes 35,
// 12% under cpu.avx512.table's gathers. Every bf16 input's result rounds as the table's correctly
// rounded one (table_test.cc checks all 65,536; 6 terms miss 3). bf16 meets a tie float cannot break
// only where x / 2 falls among its subnormals (|x| < 2^-125), and there the table's double rounds x / 2
// itself, ties to even: so kHalfErfcxOverT's constant term is set (2e-7 off the fit) to make its float
// sum at t = 1 exactly 1/2, and below |x| = 2^-75, where t = 1 and exp(-x^2 / 2) = 1, h is 1/2 and the
// result x / 2 as the table's. f16's rounding is 4x finer: kHalfErfcxOverTForF16, 9 terms (2^-22.7),
// within half a step plus 2^-22 of the truth at every input (7 terms are not: table_test.cc), 5 inputs
// not the table's bits (near x = 0, within 2^-25 of a tie: x / 2 + 0.4 x^2 at x = 2^-24), as f16's exp,
// log, sigmoid and tanh-GELU miss 1-6. Computed, it runs as fast as the table's gathers and steadier
// under a loaded core. Nothing cancels (h <= 1/2; the tail is x h); inf gives inf, -inf NaN (-inf * 0,
// as the reference), NaN NaN.
inline constexpr std::array<float, 7> kHalfErfcxOverT = {0.141206800938f,   0.138181672396f, 0.144201118407f,
                                                         0.00930629110271f, 0.208755697337f, -0.18879070406f,
                                                         0.04713914907f};
inline constexpr std::array<float, 9> kHalfErfcxOverTForF16 = {
    0.141041700253f, 0.141215629786f,  0.121340297008f, 0.102199754212f,  -0.015353510709f,
    0.141984683956f, -0.246144550231f, 0.14349017145f,  -0.0297741960561f};

// erf-GELU for results that round to T: NOTE [erf-GELU for bf16 and f16 results]; f32 results take
// gelu_erf_f32.
// Phi(x) and exp(-x^2 / 2) for results that round to T (bf16 or f16): NOTE [erf-GELU for bf16 and f16
// results]'s h and its exp, for erf-GELU and its derivative Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi).
template <class F>
struct NormalCdf {
  F cdf, gaussian;
};
template <class T, class F>
requires is_f32_like<F> && is_half_type<T>
[[gnu::always_inline]] inline NormalCdf<F> normal_cdf_rounding_to(F x) {
  const F t = F(1.0f) / mul_add(magnitude(x), F(0.35355339059327376220f), F(1.0f));
  F e;
  if constexpr (kLanes == 16)
    e = exp2_by_thirty_seconds(x * x * F(float(-0.5 * kInverseLn2)));
  else
    e = exp_nonpositive_rounding_to<T>(x * x * F(-0.5f));
  F q;
  if constexpr (std::is_same_v<T, bf16>)
    q = horner(t, kHalfErfcxOverT);
  else
    q = horner(t, kHalfErfcxOverTForF16);
  const F h = e * (t * q);
  return {select(x < F(0.0f), h, F(1.0f) - h), e};
}
template <class T, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F gelu_erf_rounding_to(F x) {
  if constexpr (is_half_type<T>)
    return x * normal_cdf_rounding_to<T>(x).cdf;
  else
    return gelu_erf_f32(x);
}

// activation.h's gelu_tanh_argument and its derivative over F (the same roundings), for the kernels.
template <class F>
[[gnu::always_inline]] inline F gelu_tanh_argument(F x) {
  return F(kGeluTanhScale) * (x + F(kGeluTanhCubic) * x * x * x);
}
template <class F>
[[gnu::always_inline]] inline F gelu_tanh_argument_derivative(F x) {
  const F capped = select(magnitude(x) < F(1e4f), x, F(1e4f));
  return F(kGeluTanhScale) * (F(1) + F(3 * kGeluTanhCubic) * capped * capped);
}

// tanh-GELU for results that round to bf16 or f16: x sigmoid(2u) = x d for x >= 0 and x e d below,
// e = exp(-2|u|), d = 1 / (1 + e), -2|u| = |x| (-2s - 2sc x^2) (s, c: gelu_tanh_argument's): one exp of
// a non-positive argument (exp_nonpositive_rounding_to) and one division; the tail needs no branch (e
// falls into the subnormals and to 0 with tanh-GELU itself) and nothing cancels. f32 results take
// times_sigmoid_f32's form.
template <class T, class F>
requires is_f32_like<F>
[[gnu::always_inline]] inline F gelu_tanh_rounding_to(F x) {
  if constexpr (is_half_type<T>) {
    const F minus_two_u = magnitude(x) * mul_add(x * x, F(float(-2 * kGeluTanhScale * kGeluTanhCubic)),
                                                 F(float(-2 * kGeluTanhScale)));
    const F e = exp_nonpositive_rounding_to<T>(minus_two_u);
    return select(x < F(0.0f), x * e, x) / (e + F(1.0f));
  } else {
    return times_sigmoid_f32(x, F(2.0f) * gelu_tanh_argument(x));
  }
}

// The kernels' exp: exp_f32 where VectorMathExp, libm's otherwise (the portable builds).
template <bool VectorMathExp, class Acc>
[[gnu::always_inline]] inline Acc exp_with(Acc x) {
  if constexpr (VectorMathExp)
    return exp_f32(x);
  else
    return std::exp(x);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
