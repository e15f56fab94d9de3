// Unary functions at the inputs the gate's random draws never reach: infinities, NaN, signed zeros,
// subnormals and the ends of exp's range, on every implementation this CPU runs. Finite results are
// compared with libm's double function rounded once to float (the correctly rounded value).
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/unary/unary.h"

namespace dew {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// The implementations that take op on dtype here, as the selector judges them.
std::vector<std::string> implementations_here(const std::string& op, DType dtype) {
  const ops::UnaryArgs args{Tensor::zeros({4}, dtype), ops::unary_from_name(op)};
  std::vector<std::string> v;
  for (const select::Verdict& verdict : ops::Unary::registry().explain(args))
    if (verdict.eligible) v.push_back(verdict.implementation);
  return v;
}

// Runs fn over xs (f32) with the op pinned to impl; the pin is cleared afterwards.
std::vector<float> run_pinned(const std::string& op, const std::string& impl, Tensor (*fn)(const Tensor&),
                              const std::vector<float>& xs, DType dtype = DType::f32) {
  set_impl_overrides(op + ":" + impl);
  std::vector<double> in(xs.begin(), xs.end());
  std::vector<double> out = fn(Tensor::from_values(in, {int64_t(xs.size())}, dtype)).to_f64_vector();
  set_impl_overrides("");
  return std::vector<float>(out.begin(), out.end());
}

// Equal as floats, NaN equal to NaN, and the sign of zero checked.
void expect_same(float got, float want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
    return;
  }
  EXPECT_EQ(got, want) << what;
  EXPECT_EQ(std::signbit(got), std::signbit(want)) << what << ": sign of " << got;
}

// want[i] for fn(xs[i]) on each implementation; `skip_portable` leaves portable out (for finite values
// that only the tiers round once: portable computes erf-GELU in float, rounding several times).
void check(const std::string& op, Tensor (*fn)(const Tensor&), const std::vector<float>& xs,
           const std::vector<float>& want, bool skip_portable = false) {
  for (const std::string& impl : implementations_here(op, DType::f32)) {
    if (skip_portable && impl == "portable") continue;
    std::vector<float> got = run_pinned(op, impl, fn, xs);
    for (size_t i = 0; i < xs.size(); ++i)
      expect_same(got[i], want[i], op + "(" + std::to_string(xs[i]) + ") on " + impl);
  }
}

Tensor gelu_erf(const Tensor& x) {
  return gelu(x, false);
}
Tensor gelu_tanh(const Tensor& x) {
  return gelu(x, true);
}

TEST(UnarySpecialValues, Exp) {
  const std::vector<float> xs{-kInf,   kInf,  kNan,   0.0f,    -0.0f,  89.0f,
                              -104.0f, 88.7f, -87.4f, -100.0f, -103.9f};
  std::vector<float> want{0.0f, kInf, kNan, 1.0f, 1.0f, kInf, 0.0f};
  for (size_t i = want.size(); i < xs.size(); ++i) want.push_back(float(std::exp(double(xs[i]))));
  check("exp", exp, xs, want);
}

// On bf16 data, every implementation that takes the function there (a tier, or cpu.table, and portable):
// results that are special (infinite, NaN, zero, or exactly
// representable truths) equal the truth, and every finite truth is matched faithfully (within one bf16
// step of it), subnormal results kept, not flushed (NOTE [native bf16 narrowing]). Inputs are padded
// to 35 values: two groups of 16 and a tail.
void check_bf16(const std::string& op, Tensor (*fn)(const Tensor&), double (*truth_of)(double),
                std::vector<float> xs, bool skip_portable = false) {
  for (float pad = 0.25f; xs.size() < 35; pad += 0.5f) xs.push_back(xs.size() % 2 ? pad : -pad);
  for (const std::string& impl : implementations_here(op, DType::bf16)) {
    if (skip_portable && impl == "portable") continue;
    const std::vector<float> got = run_pinned(op, impl, fn, xs, DType::bf16);
    for (size_t i = 0; i < xs.size(); ++i) {
      const std::string what = op + "(" + std::to_string(xs[i]) + ") on " + impl + " in bf16";
      const double x = bf16_to_f32(f32_to_bf16(xs[i]));  // the input as bf16 holds it
      const double truth = truth_of(x);
      const float rounded = bf16_to_f32(f32_to_bf16(float(truth)));  // inf past bf16's range
      if (!std::isfinite(truth) || truth == 0 || std::isinf(rounded) || double(rounded) == truth) {
        expect_same(got[i], std::isnan(truth) ? float(truth) : rounded, what);
        continue;
      }
      const double step = std::ldexp(1.0, std::max(std::ilogb(truth), -126) - 7);  // bf16's spacing there
      EXPECT_LT(std::fabs(double(got[i]) - truth), step) << what << ": got " << got[i] << ", truth " << truth;
    }
  }
}

TEST(UnarySpecialValues, Bf16Results) {
  check_bf16("exp", exp, [](double x) { return x <= -104 ? 0.0 : std::exp(x); },
             {-kInf,  kInf,    kNan, 0.0f,  -0.0f,  89.0f,  -104.0f, 1.0f,   -1.0f,  2.5f,    -3.0f,  10.0f,
              0.125f, -0.375f, 5.0f, -7.0f, -87.0f, -88.0f, -90.0f,  -92.5f, -95.0f, -100.0f, -103.0f});
  check_bf16(
      "tanh", tanh, [](double x) { return std::tanh(x); },
      {-kInf, kInf, kNan, 0.0f, -0.0f, 1e-30f, -1e-20f, 0.54f, 0.56f, -0.5f, 1.0f, 3.0f, -8.9f, 9.5f, 20.0f});
  check_bf16(
      "log", log, [](double x) { return x < 0 ? NAN : std::log(x); },
      {0.0f, -0.0f, -1.0f, kInf, -kInf, kNan, 1.0f, 1e-40f, 2.0f, 3e38f, 0.7f, 1.4f, 0.999f, 1.001f, 7.0f});
  // The sigmoid forms' denominators 1 + exp(-x) near float's end (88.7) and past it (inf), where a
  // reciprocal may fall into the subnormals or to zero (NOTE [one body for scalar and vector float
  // functions]).
  const std::vector<float> sigmoid_inputs{-kInf,  kInf,   kNan,   0.0f,   -0.0f,  1.0f,   -1.0f,   3.0f,
                                          -87.0f, -87.5f, -88.0f, -88.5f, -89.0f, -90.0f, -100.0f, 20.0f};
  check_bf16(
      "sigmoid", sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, sigmoid_inputs);
  check_bf16(
      "silu", silu, [](double x) { return std::isinf(x) && x < 0 ? NAN : x / (1.0 + std::exp(-x)); },
      sigmoid_inputs);
  // 0.5 x (1 + tanh u) = x sigmoid(2u), whose tail the tiers and cpu.table keep (portable's 1 + tanh u
  // cancels there).
  check_bf16(
      "gelu_tanh", gelu_tanh,
      [](double x) { return x / (1.0 + std::exp(-1.5957691216057307118 * (x + 0.044715 * x * x * x))); },
      {kNan, 0.0f, -0.0f, 1.0f, -1.0f, 3.0f, -3.0f, -5.0f, -9.0f, -10.0f, -12.0f, -60.0f, 60.0f},
      /*skip_portable=*/true);
  // The erf-GELU's negative tail keeps its relative accuracy (1 + erf(z) written as erfc(-z)),
  // past |z| = 4 and down to where it underflows (in cpu.table: portable's 1 + erf cancels there).
  check_bf16(
      "gelu", gelu_erf, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); },
      {kInf,  kNan,  0.0f,  -0.0f, 0.1f,   -0.3f,  1.0f, -1.5f, -3.0f, -5.0f,
       -5.6f, -5.7f, -6.0f, -8.0f, -11.0f, -13.0f, 3.0f, 5.7f,  6.0f,  20.0f},
      /*skip_portable=*/true);
}

// relu keeps NaN (as PyTorch does) and gives +0 for -0, on every implementation and dtype. It gave 0
// for NaN before (x > 0 ? x : 0).
TEST(UnarySpecialValues, ReluKeepsNan) {
  const std::vector<float> xs{kNan, -0.0f, 0.0f, -kInf, kInf, -1.5f, 2.5f};
  const std::vector<float> want{kNan, 0.0f, 0.0f, 0.0f, kInf, 0.0f, 2.5f};
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (const std::string& impl : implementations_here("relu", dtype)) {
      const std::vector<float> got = run_pinned("relu", impl, relu, xs, dtype);
      for (size_t i = 0; i < xs.size(); ++i)
        expect_same(
            got[i], want[i],
            "relu(" + std::to_string(xs[i]) + ") on " + impl + " in " + std::string(dtype_name(dtype)));
    }
}

// Every f16 value through neg, abs, relu and square on every implementation that takes them on f16 (the
// tiers load f16 with vcvtph2ps and store with vcvtps2ph): the first three exact, the sign of zero kept;
// square (exact in float) rounded once as dtype.h's f32_to_f16 rounds, ties to even, into the
// subnormals and to inf past 65504.
TEST(UnarySpecialValues, EveryF16ValueLoadsAndRoundsAsDtypeH) {
  std::vector<float> xs;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) xs.push_back(f16_to_f32(f16{uint16_t(bits)}));
  const struct {
    const char* op;
    Tensor (*fn)(const Tensor&);
    float (*truth)(float);
  } cases[] = {{"neg", neg, [](float x) { return -x; }},
               {"abs", abs, [](float x) { return std::fabs(x); }},
               {"relu", relu, [](float x) { return x > 0 || std::isnan(x) ? x : 0.0f; }},
               {"square", square, [](float x) { return f16_to_f32(f32_to_f16(x * x)); }}};
  for (const auto& c : cases)
    for (const std::string& impl : implementations_here(c.op, DType::f16)) {
      const std::vector<float> got = run_pinned(c.op, impl, c.fn, xs, DType::f16);
      int wrong = 0;
      for (size_t i = 0; i < xs.size() && wrong < 5; ++i) {
        const float want = c.truth(xs[i]);
        const bool same = std::isnan(want) ? std::isnan(got[i])
                                           : got[i] == want && std::signbit(got[i]) == std::signbit(want);
        if (!same) ++wrong;
        EXPECT_TRUE(same) << c.op << "(" << xs[i] << ") on " << impl << " in f16: got " << got[i] << ", want "
                          << want;
      }
    }
}

TEST(UnarySpecialValues, Tanh) {
  const std::vector<float> xs{kInf, -kInf, kNan, -0.0f, 0.0f, 1e-30f, 30.0f, -30.0f, 0.5f, -3.0f};
  std::vector<float> want{1.0f, -1.0f, kNan, -0.0f, 0.0f, 1e-30f, 1.0f, -1.0f};
  for (size_t i = want.size(); i < xs.size(); ++i) want.push_back(float(std::tanh(double(xs[i]))));
  check("tanh", tanh, xs, want);
}

TEST(UnarySpecialValues, Log) {
  const std::vector<float> xs{0.0f, -0.0f, -1.0f, kInf, -kInf, kNan, 1.0f, 1e-40f, 2.0f, 3e38f};
  std::vector<float> want{-kInf, -kInf, kNan, kInf, kNan, kNan, 0.0f};
  for (size_t i = want.size(); i < xs.size(); ++i) want.push_back(float(std::log(double(xs[i]))));
  check("log", log, xs, want);
}

// f32 erf-GELU on the tiers rounds about eight times in float (NOTE [erf-GELU in float]): within the 6
// ulps that note states of the truth, in the negative tail too, where the double evaluation before it
// gave 0 past x = -5.66 and portable's 1 + erf cancels.
TEST(UnarySpecialValues, GeluErf) {
  check("gelu", gelu_erf, {kInf, kNan, 0.0f, -0.0f, 10.0f, -20.0f}, {kInf, kNan, 0.0f, -0.0f, 10.0f, -0.0f});
  const std::vector<float> xs{1.0f, -2.5f, 0.3f, -0.7f, 1e-20f, -1e-30f, -6.0f, -8.0f, -11.0f, -13.0f};
  for (const std::string& impl : implementations_here("gelu", DType::f32)) {
    if (impl == "portable") continue;
    const std::vector<float> got = run_pinned("gelu", impl, gelu_erf, xs);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double x = xs[i], truth = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
      const double ulp = std::ldexp(1.0, std::max(std::ilogb(truth), -126) - 23);  // float's spacing there
      EXPECT_LE(std::fabs(double(got[i]) - truth), 6 * ulp)
          << "gelu(" << xs[i] << ") on " << impl << ": got " << got[i] << ", truth " << truth;
    }
  }
}

}  // namespace
}  // namespace dew
