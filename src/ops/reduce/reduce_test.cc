// Reductions' own tests beyond OpSuite: argmax's rules where random inputs never go (ties, NaN, signed
// zeros) on every implementation this CPU has, and the routes of the column and row kernels.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dew {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> implementations_taken(const std::string& op) {
  std::vector<std::string> out;
  for (const RouteRecord& r : routes())
    if (r.op == op) out.push_back(r.implementation);
  return out;
}

TEST(Argmax, FirstMaximumAndFirstNaNOnEveryImplementation) {
  // Rows of 150 (past a 64-element block): the maximum tied at 70 and 140; a NaN at 100 after a larger
  // value; -0 before +0 in a row of zeros; the maximum in the last element.
  std::vector<double> x(4 * 150, -1.0);
  x[70] = x[140] = 5;
  x[150 + 20] = 9, x[150 + 100] = kNaN, x[150 + 120] = kNaN;
  for (int i = 0; i < 150; ++i) x[300 + i] = i == 3 ? -0.0 : 0.0;
  x[450 + 149] = 2;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const char* impl : {"portable", "cpu.avx2.rows", "cpu.avx512.rows"}) {
      const CpuFeatures& f = cpu_features();
      const bool avx2 = f.avx2 && f.fma, avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
      if ((std::string(impl) == "cpu.avx2.rows" && !avx2) ||
          (std::string(impl) == "cpu.avx512.rows" && !avx512))
        continue;  // this CPU lacks the tier
      set_impl_overrides(std::string("argmax:") + impl);
      reset_routes();
      const Tensor at = argmax(Tensor::from_values(x, {4, 150}, dtype), -1);
      EXPECT_EQ(at.to_f64_vector(), (std::vector<double>{70, 100, 0, 149}))
          << impl << " " << dtype_name(dtype);
      EXPECT_EQ(implementations_taken("argmax"), std::vector<std::string>{impl});
    }
  }
  set_impl_overrides("");
}

TEST(Sum, OverLeadingAxesTakesTheColumnKernelAndEqualsThePortablePathBitForBit) {
  std::vector<double> x;
  for (int i = 0; i < 3 * 5 * 40; ++i) x.push_back(std::sin(0.37 * i) * (1 + i % 7));
  const Tensor t = Tensor::from_values(x, {3, 5, 40}, DType::f32);
  set_impl_overrides("sum:portable");
  const std::vector<double> portable = sum(t, {0, 1}).to_f64_vector();
  set_impl_overrides("");
  reset_routes();
  EXPECT_EQ(sum(t, {0, 1}).to_f64_vector(), portable);
  ASSERT_EQ(implementations_taken("sum").size(), 1u);
  EXPECT_NE(implementations_taken("sum")[0].find(".columns"), std::string::npos);
}

}  // namespace
}  // namespace dew
