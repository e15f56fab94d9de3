// The tier's FloatVec (F32x8 in avx2, F32x16 in avx512) against the scalar float bodies it stands in
// for: vector_math.h's functions give the same floats bit for bit (NOTE [one body for scalar and vector
// float functions]; a strided row runs the scalar body and a contiguous one the vector, and both must
// give the same values), bf16 and f16 stores round as dtype.h does, tails read and write only their lanes,
// and a row's max skips NaN. Included by one test file per tier, which defines DEW_KERNEL_NS first.
#pragma once

#include <dew/dtype.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "select/requirements.h"
#include "simd/float_vec.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS::float_vec_checks {

// y[i] = f(x[i]) through FloatVec (full vectors, then a tail) and through the scalar body.
template <class F>
void on_vectors(const std::vector<float>& x, std::vector<float>& y, F f) {
  const int64_t n = int64_t(x.size());
  int64_t i = 0;
  for (; i + kVecWidth <= n; i += kVecWidth) store_vec(y.data() + i, f(load_vec(x.data() + i)));
  if (i < n) store_vec(y.data() + i, f(load_vec(x.data() + i, int(n - i))), int(n - i));
}
template <class F>
void on_scalars(const std::vector<float>& x, std::vector<float>& y, F f) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
}

// Every function written over F, by name, on both paths.
struct Results {
  std::string name;
  std::vector<float> vector, scalar;
};
#define DEW_BOTH_PATHS(name, call)                                               \
  [&] {                                                                          \
    Results r{name, std::vector<float>(x.size()), std::vector<float>(x.size())}; \
    const auto f = []<class V>(V v) __attribute__((always_inline)) {             \
      return call;                                                               \
    };                                                                           \
    on_vectors(x, r.vector, f);                                                  \
    on_scalars(x, r.scalar, f);                                                  \
    return r;                                                                    \
  }()
// The exps alone (their accuracy tests sweep millions of inputs), then every function.
inline std::vector<Results> exps(const std::vector<float>& x) {
  return {DEW_BOTH_PATHS("exp_f32", exp_f32(v)),
          DEW_BOTH_PATHS("exp_f32_within_2ulp", exp_f32_within_2ulp(v)),
          DEW_BOTH_PATHS("exp_nonpositive_rounding_to<bf16> of -|x|",
                         exp_nonpositive_rounding_to<bf16>(-magnitude(v))),
          DEW_BOTH_PATHS("exp_nonpositive_rounding_to<f16> of -|x| less 3.5",
                         exp_nonpositive_rounding_to<f16>(-magnitude(v), V(3.5f)))};
}
inline std::vector<Results> all_functions(const std::vector<float>& x) {
  std::vector<Results> all = exps(x);
  for (Results& r :
       std::vector<Results>{DEW_BOTH_PATHS("log_f32", log_f32(v)), DEW_BOTH_PATHS("tanh_f32", tanh_f32(v)),
                            DEW_BOTH_PATHS("sigmoid", times_sigmoid_f32(V(1.0f), v)),
                            DEW_BOTH_PATHS("silu", times_sigmoid_f32(v, v)),
                            DEW_BOTH_PATHS("sigmoid_pair", sigmoid_pair_f32(v).s_neg),
                            DEW_BOTH_PATHS("gelu_erf", gelu_erf_f32(v)),
                            DEW_BOTH_PATHS("gelu_erf'", gelu_erf_derivative_f32(v)),
                            DEW_BOTH_PATHS("gelu_tanh_argument", gelu_tanh_argument(v)),
                            DEW_BOTH_PATHS("tanh_rounding_to<bf16>", tanh_rounding_to<bf16>(v)),
                            DEW_BOTH_PATHS("gelu_tanh_rounding_to<f16>", gelu_tanh_rounding_to<f16>(v)),
                            DEW_BOTH_PATHS("log_rounding_to<bf16>", log_rounding_to<bf16>(v)),
                            DEW_BOTH_PATHS("exp2_rounding_to<bf16>", exp2_rounding_to<bf16>(v)),
                            DEW_BOTH_PATHS("negated magnitude", -magnitude(v)),
                            DEW_BOTH_PATHS("with_sign_of", with_sign_of(V(2.5f), v)),
                            DEW_BOTH_PATHS("relu as a select", select(v > V(0.0f), v, V(0.0f)))})
    all.push_back(std::move(r));
  return all;
}
inline Results tanh_f32_results(const std::vector<float>& x) {
  return DEW_BOTH_PATHS("tanh_f32", tanh_f32(v));
}
#undef DEW_BOTH_PATHS

// T (bf16 or f16) values of x through store_vec (full vectors and a tail of `tail` lanes), with a
// sentinel after the row that a store past it would overwrite.
template <class T>
inline std::vector<T> stored_as(const std::vector<float>& x, int tail) {
  std::vector<T> y(x.size() + 1, T{0x5555});
  const int64_t n = int64_t(x.size());
  int64_t i = 0;
  for (; i + kVecWidth <= n - tail; i += kVecWidth) store_vec(y.data() + i, load_vec(x.data() + i));
  for (; i < n; i += tail) {
    const int lanes = int(std::min<int64_t>(tail, n - i));
    store_vec(y.data() + i, load_vec(x.data() + i, lanes), lanes);
  }
  return y;
}

// bf16 row x widened and stored as floats through load_vec's tail and store_vec's tail.
inline std::vector<float> widened(const std::vector<bf16>& x, int lanes) {
  std::vector<float> y(size_t(lanes) + 1, 7.0f);
  store_vec(y.data(), load_vec(x.data(), lanes), lanes);
  return y;
}

// Whether store_vec narrows bf16 on this CPU (F32x16's needs AVX512-BF16).
inline bool stores_bf16() {
  return rows_on_float_vec<bf16>();
}

// The lanes of kVecWidth vectors (x holds kVecWidth^2 floats, vector i at i * kVecWidth) summed by
// lanes_sums at once ([0]) and by lanes_sum one vector at a time ([1]).
inline std::array<std::vector<float>, 2> lanes_sums_both_ways(const std::vector<float>& x) {
  FloatVec v[kVecWidth];
  std::array<std::vector<float>, 2> sums{std::vector<float>(kVecWidth), std::vector<float>(kVecWidth)};
  for (int i = 0; i < kVecWidth; ++i) {
    v[i] = load_vec(x.data() + i * kVecWidth);
    sums[1][size_t(i)] = lanes_sum(v[i]);
  }
  store_vec(sums[0].data(), lanes_sums(v));
  return sums;
}

inline float row_max(const std::vector<float>& x) {
  return row_max_vec(x.data(), int64_t(x.size()));
}

}  // namespace dew::ops::DEW_KERNEL_NS::float_vec_checks
DEW_ISA_END

namespace dew {
namespace {

namespace checks = ops::DEW_KERNEL_NS::float_vec_checks;

#define DEW_FLOAT_VEC_TEST(name) TEST(DEW_ISA_CONCAT(FloatVec_, DEW_KERNEL_NS), name)
#define DEW_NEED_TIER()                                  \
  if (!select::cpu_supports(select::Isa::DEW_KERNEL_NS)) \
  GTEST_SKIP() << "this CPU lacks the " DEW_ISA_STR(DEW_KERNEL_NS) " tier"

// Special values, the ends of exp's and float's ranges, subnormals, and a sweep of ordinary values.
std::vector<float> probe_inputs() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x{
      0.0f,           -0.0f,          inf,           -inf,           nan,    -nan,   1e-45f, -1e-45f, 1e-40f,
      1.1754942e-38f, 1.1754944e-38f, 3.4028235e38f, -3.4028235e38f, 88.72f, 88.73f, 89.0f,  -87.3f,  -88.0f,
      -89.0f,         -103.9f,        -104.0f,       -150.0f,        1e19f,  -1e19f, 2e19f,  -2e19f,  1e30f,
      9.0f,           -9.0f,          20.0f,         0.5f,           0.35f};
  for (int k = -4000; k <= 4000; ++k) x.push_back(float(k) * 0.03f + 0.001f);  // -120 .. 120
  for (uint32_t bits = 0x00000001u; bits < 0x7f800000u; bits += 0x000fedc9u)   // magnitudes, both signs
    x.push_back(std::bit_cast<float>(bits)), x.push_back(-std::bit_cast<float>(bits));
  return x;
}

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

DEW_FLOAT_VEC_TEST(FunctionsEqualTheirScalarBodies) {
  DEW_NEED_TIER();
  const std::vector<float> x = probe_inputs();
  for (const checks::Results& r : checks::all_functions(x)) {
    int mismatches = 0;
    for (size_t i = 0; i < x.size() && mismatches < 5; ++i)
      if (!same_float(r.vector[i], r.scalar[i])) {
        ++mismatches;
        ADD_FAILURE() << r.name << "(" << x[i] << " = 0x" << std::hex << std::bit_cast<uint32_t>(x[i])
                      << std::dec << "): vector " << r.vector[i] << ", scalar " << r.scalar[i];
      }
  }
}

// The exps against double exp over every 997th float of [-104, 89] and the probes, both paths, within
// `ulps` of the truth; subnormal results, rounded twice (in float, then by 2^floor(q) into the
// subnormals), within 1 of their ulp (2^-149). 0 and inf where exp rounds to them, NaN kept.
// NOTE [exp by sixteenths] and NOTE [compensated exp]: 1.06 and 0.54 ulp at worst, measured. With
// `less` (an exp of x <= 0 only), the function takes -|x| and m = *less, computes exp(-|x| - m) and
// rounds y = (-|x| - m) / ln 2 or drops ln 2's low part, which moves it by (1.25 |x - m| + |m|) 2^-24
// relative at most (NOTE [exps of x <= 0 by thirty-seconds]; sixteenths' |q| 2^-29 is below that).
void expect_exp_within(const std::string& name, double ulps, std::optional<double> less = std::nullopt) {
  std::vector<float> x = probe_inputs();
  for (uint32_t bits = 0; bits < 0x42b20000u; bits += 997) x.push_back(std::bit_cast<float>(bits));
  for (uint32_t bits = 0x80000000u; bits < 0xc2d00000u; bits += 997) x.push_back(std::bit_cast<float>(bits));
  const std::vector<checks::Results> all = checks::exps(x);
  const auto exp = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.name == name; });
  ASSERT_NE(exp, all.end()) << name;
  int failures = 0;
  for (size_t i = 0; i < x.size() && failures < 5; ++i) {
    const double argument = less ? -std::fabs(double(x[i])) - *less : double(x[i]);
    const double truth = std::exp(argument);
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(truth), -126) - 23);
    const double rounded_y =
        less && truth > 0 ? truth * (1.25 * std::fabs(argument) + std::fabs(*less)) * 0x1p-24 : 0;
    const double bound = (truth < 0x1p-126 ? std::max(ulps, 1.0) : ulps) * ulp + rounded_y;
    for (float got : {exp->vector[i], exp->scalar[i]}) {
      const bool ok = std::isnan(x[i])  ? std::isnan(got)
                      : std::isinf(got) ? got > 0 && truth > 0x1.fffffep127 - ulps * 0x1p104
                                        : std::fabs(double(got) - truth) <= bound;
      if (!ok) ++failures, ADD_FAILURE() << name << "(" << x[i] << ") = " << got << ", truth " << truth;
    }
  }
}

DEW_FLOAT_VEC_TEST(ExpWithin2UlpIsWithinTwoUlp) {
  DEW_NEED_TIER();
  expect_exp_within("exp_f32_within_2ulp", 2.0);
}

// NOTE [exps of x <= 0 by thirty-seconds] on the avx512 tier, sixteenths on the others; exp(a - m) with
// the subtraction folded in as well.
DEW_FLOAT_VEC_TEST(ExpOfNonpositiveForHalfResultsIsWithinTwoUlp) {
  DEW_NEED_TIER();
  expect_exp_within("exp_nonpositive_rounding_to<bf16> of -|x|", 2.0, 0.0);
  expect_exp_within("exp_nonpositive_rounding_to<f16> of -|x| less 3.5", 2.0, 3.5);
}

DEW_FLOAT_VEC_TEST(ExpF32IsWithin0_6Ulp) {
  DEW_NEED_TIER();
  expect_exp_within("exp_f32", 0.6);
}

// NOTE [f32 tanh in float]: at most 1.36 ulp over the floats of (0, 9.2], here every 61st of them, both
// signs, and the probes (NaN kept, +-1 past 9.01).
DEW_FLOAT_VEC_TEST(TanhF32IsWithin1_4Ulp) {
  DEW_NEED_TIER();
  std::vector<float> x = probe_inputs();
  for (uint32_t bits = 0; bits < 0x41133333u; bits += 61)
    x.push_back(std::bit_cast<float>(bits)), x.push_back(-std::bit_cast<float>(bits));
  const checks::Results r = checks::tanh_f32_results(x);
  int failures = 0;
  for (size_t i = 0; i < x.size() && failures < 5; ++i) {
    const double truth = std::tanh(double(x[i]));
    const double ulp = std::ldexp(1.0, std::max(std::ilogb(float(truth)), -126) - 23);
    for (float got : {r.vector[i], r.scalar[i]})
      if (std::isnan(x[i]) ? !std::isnan(got) : !(std::fabs(double(got) - truth) <= 1.4 * ulp))
        ++failures, ADD_FAILURE() << "tanh_f32(" << x[i] << ") = " << got << ", truth " << truth;
  }
}

// Every float's upper half with the low halves that decide rounding: zero, just under, at and just over
// the tie, and all ones; NaN payloads, subnormals and the overflow to inf among them.
DEW_FLOAT_VEC_TEST(Bf16StoresRoundAsDtypeDoes) {
  DEW_NEED_TIER();
  if (!checks::stores_bf16()) GTEST_SKIP() << "this tier narrows bf16 with an instruction this CPU lacks";
  std::vector<float> x;
  for (uint32_t high = 0; high <= 0xffffu; ++high)
    for (uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      x.push_back(std::bit_cast<float>(high << 16 | low));
  for (int tail : {1, 3, ops::DEW_KERNEL_NS::kVecWidth - 1}) {
    const std::vector<bf16> y = checks::stored_as<bf16>(x, tail);
    int mismatches = 0;
    for (size_t i = 0; i < x.size() && mismatches < 5; ++i)
      if (y[i].bits != f32_to_bf16(x[i]).bits)
        ++mismatches, ADD_FAILURE() << "0x" << std::hex << std::bit_cast<uint32_t>(x[i]) << " stored as 0x"
                                    << y[i].bits << ", dtype.h rounds it to 0x" << f32_to_bf16(x[i]).bits;
    EXPECT_EQ(y.back().bits, 0x5555) << "a tail of " << tail << " lanes wrote past the row";
  }
}

// Every f16 value with the low float bits that decide its rounding (zero, just under, at and just over
// the tie, all ones), and floats across the whole range (f16's subnormals and its overflow to inf among
// them): vcvtps2ph rounds as dtype.h does, NaN kept (its payload is vcvtps2ph's).
DEW_FLOAT_VEC_TEST(F16StoresRoundAsDtypeDoes) {
  DEW_NEED_TIER();
  std::vector<float> x;
  for (uint32_t h = 0; h <= 0xffffu; ++h)
    for (uint32_t low : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu})
      x.push_back(std::bit_cast<float>(std::bit_cast<uint32_t>(f16_to_f32(f16{uint16_t(h)})) | low));
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 0x00003fc7u)
    x.push_back(std::bit_cast<float>(bits)), x.push_back(-std::bit_cast<float>(bits));
  for (int tail : {1, 3, ops::DEW_KERNEL_NS::kVecWidth - 1}) {
    const std::vector<f16> y = checks::stored_as<f16>(x, tail);
    int mismatches = 0;
    for (size_t i = 0; i < x.size() && mismatches < 5; ++i) {
      const bool same = std::isnan(x[i]) ? std::isnan(f16_to_f32(y[i])) : y[i].bits == f32_to_f16(x[i]).bits;
      if (!same)
        ++mismatches, ADD_FAILURE() << "0x" << std::hex << std::bit_cast<uint32_t>(x[i]) << " stored as 0x"
                                    << y[i].bits << ", dtype.h rounds it to 0x" << f32_to_f16(x[i]).bits;
    }
    EXPECT_EQ(y.back().bits, 0x5555) << "a tail of " << tail << " lanes wrote past the row";
  }
}

DEW_FLOAT_VEC_TEST(TailsReadAndWriteOnlyTheirLanes) {
  DEW_NEED_TIER();
  const int W = ops::DEW_KERNEL_NS::kVecWidth;
  std::vector<bf16> x;
  for (int i = 0; i < W; ++i) x.push_back(f32_to_bf16(float(i + 1)));
  for (int lanes = 1; lanes <= W; ++lanes) {
    const std::vector<float> y = checks::widened(x, lanes);
    for (int i = 0; i < lanes; ++i) EXPECT_EQ(y[size_t(i)], float(i + 1)) << "lane " << i << " of " << lanes;
    EXPECT_EQ(y[size_t(lanes)], 7.0f) << "a store of " << lanes << " lanes wrote past them";
  }
}

// NOTE [logs by sixteenths]: for the sixteenths j = 12..24 of [3/4, 3/2], 16/j rounded to float, and
// -log2 and -ln of that float rounded once from long double (64-bit mantissas); and the exps' tables.
DEW_FLOAT_VEC_TEST(TablesHoldTheirValuesRoundedOnce) {
  for (int j = 12; j <= 24; ++j) {
    const float inverse = float(16.0L / j);
    EXPECT_EQ(ops::DEW_KERNEL_NS::kInverseSixteenths[j % 16], inverse) << "j = " << j;
    EXPECT_EQ(ops::DEW_KERNEL_NS::kLog2Sixteenths[j % 16], float(-log2l(inverse))) << "j = " << j;
    EXPECT_EQ(ops::DEW_KERNEL_NS::kLnSixteenths[j % 16], float(-logl(inverse))) << "j = " << j;
  }
  // NOTE [exps of x <= 0 by thirty-seconds]: 2^(j/32) rounded once.
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(ops::DEW_KERNEL_NS::kExp2ThirtySeconds[j], float(exp2l(j / 32.0L))) << j;
}

// lanes_sums folds many vectors by the same halves as lanes_sum: the same bits, in order (a kernel that
// sums a tile's accumulators at once gives each output as it would alone). Magnitudes spread over 2^40,
// so a different order of additions would round differently.
DEW_FLOAT_VEC_TEST(LanesSumsEqualLanesSumOneVectorAtATime) {
  DEW_NEED_TIER();
  const int width = ops::DEW_KERNEL_NS::kVecWidth;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> x(size_t(width * width));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::ldexp(float((i * 7919 + size_t(trial) * 104729) % 2001) - 1000.0f,
                        int((i * 31 + size_t(trial)) % 41) - 20);
    const auto sums = checks::lanes_sums_both_ways(x);
    for (int i = 0; i < width; ++i)
      ASSERT_TRUE(same_float(sums[0][size_t(i)], sums[1][size_t(i)]))
          << "trial " << trial << ", vector " << i << ": " << sums[0][size_t(i)] << " against "
          << sums[1][size_t(i)];
  }
}

DEW_FLOAT_VEC_TEST(RowMaxSkipsNanAndCountsOnlyTheRow) {
  DEW_NEED_TIER();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Past 4 vectors the row runs through four partial maxima: a unique largest element at every
  // position finds a partial that is dropped, and the tails after them.
  for (int n = 0; n <= 9 * ops::DEW_KERNEL_NS::kVecWidth + 3; ++n) {
    std::vector<float> x(static_cast<size_t>(n));
    float want = -std::numeric_limits<float>::infinity();
    for (int i = 0; i < n; ++i) {
      x[size_t(i)] = i % 5 == 2 ? nan : float((i * 37) % 23) - 30.0f;
      if (!std::isnan(x[size_t(i)])) want = std::max(want, x[size_t(i)]);
    }
    EXPECT_EQ(checks::row_max(x), want) << "row of " << n;
    for (int k = 0; k < n; ++k) {
      std::vector<float> y = x;
      y[size_t(k)] = 100.0f;
      ASSERT_EQ(checks::row_max(y), 100.0f) << "row of " << n << ", largest at " << k;
    }
  }
}

}  // namespace
}  // namespace dew
