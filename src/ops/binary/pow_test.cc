// pow on the CPU tiers against powl: f32 through double (NOTE [pow through double]) within half an ulp
// of the truth plus 2^-40 relative, as correctly rounded as libm's powf, over bases from subnormal to
// huge (and a few steps from 1) and exponents of both signs, results from subnormal to near the largest
// float; bf16 and f16 in
// float within half a step plus 2^-17 relative of |b ln a| (float's error, amplified).
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gate/rule_gate.h"
#include "routes.h"
#include "select/requirements.h"

namespace dew {
namespace {

struct Draws {
  std::vector<double> a, b;
};

// Bases 2^u (u uniform in [low, high)) times a mantissa, exponents with |b log2 a| below `reach` (past
// the format's range on either side: overflow and underflow too), deterministic.
Draws draws(int n, int low, int high, double reach) {
  Draws d;
  uint64_t state = 12345;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) * 0x1p-53;
  };
  for (int i = 0; i < n; ++i) {
    const double a = float(std::ldexp(1.0 + uniform(), int(low + (high - low) * uniform())));
    const double l2 = std::log2(a);
    const double b = float((uniform() * 2 - 1) * (l2 == 0 ? 3.0 : reach / std::fabs(l2)));
    d.a.push_back(a), d.b.push_back(b);
  }
  return d;
}

// Bases 1 and a few steps of the format either side of it, where log a is 0 or tiny and exponents
// reach 2^30 (the largest finite for 1): where a cancellation in log a would show, amplified.
Draws near_one_draws(int mantissa_bits, double reach, double largest) {
  Draws d;
  for (int steps = -64; steps <= 64; ++steps) {
    const double a = 1.0 + std::ldexp(double(steps), -mantissa_bits - (steps < 0 ? 1 : 0));
    for (double fraction : {-1.0, -0.37, -0.01, 0.003, 0.5, 0.93})  // 1^b = 1 up to the largest b
      d.a.push_back(a),
          d.b.push_back(float(fraction * (steps == 0 ? largest : reach / std::fabs(std::log2(a)))));
  }
  return d;
}

// Each tier this CPU has (the avx512 tier's doubles look their tables up by permutes, the avx2 tier's
// by gathers).
std::vector<std::string> tiers() {
  std::vector<std::string> t;
  if (select::cpu_supports(select::Isa::avx2)) t.push_back("cpu.avx2");
  if (select::cpu_supports(select::Isa::avx512)) t.push_back("cpu.avx512");
  return t;
}

void check(DType dtype, int mantissa_bits, int min_exponent, double largest, long double slack_per_log) {
  if (tiers().empty()) GTEST_SKIP() << "pow runs on the tiers only";
  const int top = std::ilogb(largest);  // bases and results from the smallest subnormal to past the top
  Draws d = draws(20000, min_exponent - mantissa_bits, top, 1.2 * (top - min_exponent + mantissa_bits) / 2);
  const Draws near_one = near_one_draws(mantissa_bits, top, largest);
  d.a.insert(d.a.end(), near_one.a.begin(), near_one.a.end());
  d.b.insert(d.b.end(), near_one.b.begin(), near_one.b.end());
  const int64_t n = int64_t(d.a.size());
  const Tensor a = Tensor::from_values(d.a, {n}, dtype), b = Tensor::from_values(d.b, {n}, dtype);
  const std::vector<double> as = a.to_f64_vector(), bs = b.to_f64_vector();
  for (const std::string& tier : tiers()) {
    Tensor y;
    {
      gate::ScopedImplOverrides pinned("pow:" + tier);
      EXPECT_ROUTE("pow", tier, y = pow(a, b));
    }
    const std::vector<double> ys = y.to_f64_vector();
    int failures = 0;
    for (int64_t i = 0; i < n && failures < 5; ++i) {
      const long double truth = std::pow((long double)as[size_t(i)], (long double)bs[size_t(i)]);
      const double got = ys[size_t(i)];
      bool ok;
      if (truth == 0)
        ok = got == 0;
      else if (truth >= largest * (1 + std::ldexp(1.0, -mantissa_bits - 1)))
        ok = std::isinf(got);
      else {
        const int e = std::max(int(std::ilogb(truth)), min_exponent);
        const long double half_step = std::ldexp(1.0L, e - mantissa_bits - 1);
        const long double amplified = std::fabs(bs[size_t(i)] * std::log((long double)as[size_t(i)]));
        ok = std::fabs(got - truth) <= half_step + truth * slack_per_log * (1 + amplified);
      }
      if (!ok)
        ++failures, ADD_FAILURE() << "pow(" << as[size_t(i)] << ", " << bs[size_t(i)] << ") = " << got
                                  << ", truth " << double(truth) << " in " << dtype_name(dtype) << " on "
                                  << tier;
    }
  }
}

TEST(Pow, F32ThroughDoubleRoundsOnceFromTheTruth) {
  check(DType::f32, 23, -126, 3.4028234663852886e38, 0x1p-40L);
}

TEST(Pow, Bf16AndF16InFloatWithinTheirRounding) {
  check(DType::bf16, 7, -126, 3.3895313892515355e38, 0x1p-17L);
  check(DType::f16, 10, -14, 65504.0, 0x1p-17L);
}

}  // namespace
}  // namespace dew
