// Reductions' own tests beyond OpSuite: the special values random inputs never hold (ties, NaN, signed
// zeros, infinities), on every implementation this CPU has and across the row kernel's pieces; results
// that do not depend on the thread count; the routes of the column and row kernels.
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

// The implementations of op this CPU runs, among portable and the tiers' `algorithm` kernels.
std::vector<std::string> implementations_here(const std::string& algorithm) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma, avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  std::vector<std::string> out{"portable"};
  if (avx2) out.push_back("cpu.avx2." + algorithm);
  if (avx512) out.push_back("cpu.avx512." + algorithm);
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
    for (const std::string& impl : implementations_here("rows")) {
      set_impl_overrides("argmax:" + impl);
      reset_routes();
      const Tensor at = argmax(Tensor::from_values(x, {4, 150}, dtype), -1);
      EXPECT_EQ(at.to_f64_vector(), (std::vector<double>{70, 100, 0, 149}))
          << impl << " " << dtype_name(dtype);
      EXPECT_EQ(implementations_taken("argmax"), std::vector<std::string>{impl});
    }
  }
  set_impl_overrides("");
}

// Rows of 40,000 (three of the row kernel's pieces of 16,384) holding what random draws never do: a
// NaN in the second piece after a larger value; the maximum and minimum in the last piece; an inf with
// a NaN after it (logsumexp: inf); -inf only (logsumexp: -inf); a NaN among finite values.
TEST(Reduce, SpecialValuesOverRowsOnEveryImplementation) {
  constexpr int n = 40000;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> x(5 * n);
  for (int i = 0; i < 5 * n; ++i) x[size_t(i)] = std::sin(0.01 * i);
  x[100] = 7, x[20000] = kNaN, x[30000] = kNaN;            // row 0
  x[n + 39990] = 9, x[n + 35000] = -9;                     // row 1
  x[2 * n + 5] = kInf, x[2 * n + 33000] = kNaN;            // row 2
  std::fill(x.begin() + 3 * n, x.begin() + 4 * n, -kInf);  // row 3
  x[4 * n + 17000] = kNaN;                                 // row 4
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    const Tensor t = Tensor::from_values(x, {5, n}, dtype);
    for (const std::string& impl : implementations_here("rows")) {
      set_impl_overrides("max:" + impl + ",min:" + impl + ",logsumexp:" + impl);
      reset_routes();
      const std::vector<double> mx = max(t, {-1}).to_f64_vector(), mn = min(t, {-1}).to_f64_vector(),
                                lse = logsumexp(t, {-1}).to_f64_vector();
      const std::string where = impl + " " + std::string(dtype_name(dtype));
      EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mn[0])) << where;
      EXPECT_EQ(mx[1], 9) << where;
      EXPECT_EQ(mn[1], -9) << where;
      EXPECT_TRUE(std::isnan(mx[2]) && std::isnan(mn[2])) << where;
      EXPECT_EQ(mx[3], -kInf) << where;
      EXPECT_EQ(lse[2], kInf) << where;
      EXPECT_EQ(lse[3], -kInf) << where;
      EXPECT_TRUE(std::isnan(lse[0]) && std::isnan(lse[4])) << where;
      EXPECT_TRUE(std::isfinite(lse[1])) << where;
      EXPECT_EQ(implementations_taken("logsumexp"), std::vector<std::string>{impl}) << where;
    }
  }
  set_impl_overrides("");
}

// The same special values down columns: a NaN after a larger value, an inf with a NaN after it.
TEST(Reduce, SpecialValuesDownColumnsOnEveryImplementation) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> x(70 * 3, 0.5);
  x[3 * 10 + 0] = 7, x[3 * 20 + 0] = kNaN;                    // column 0
  x[3 * 5 + 1] = kInf, x[3 * 9 + 1] = kNaN;                   // column 1
  for (int r = 0; r < 70; ++r) x[size_t(3 * r + 2)] = -kInf;  // column 2
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    const Tensor t = Tensor::from_values(x, {70, 3}, dtype);
    for (const std::string& impl : implementations_here("columns")) {
      set_impl_overrides("max:" + impl + ",min:" + impl + ",logsumexp:" + impl);
      const std::vector<double> mx = max(t, {0}).to_f64_vector(), mn = min(t, {0}).to_f64_vector(),
                                lse = logsumexp(t, {0}).to_f64_vector();
      const std::string where = impl + " " + std::string(dtype_name(dtype));
      EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mn[0]) && std::isnan(lse[0])) << where;
      EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mn[1])) << where;
      EXPECT_EQ(lse[1], kInf) << where;
      EXPECT_EQ(mx[2], -kInf) << where;
      EXPECT_EQ(lse[2], -kInf) << where;
    }
  }
  set_impl_overrides("");
}

// A sum over every axis of 200,000 values takes the row kernel in pieces over the threads: the same
// bits at one thread and at two.
TEST(Reduce, LongRowResultsDoNotDependOnTheThreadCount) {
  std::vector<double> x;
  for (int i = 0; i < 200000; ++i) x.push_back(std::sin(0.37 * i) * (1 + i % 7));
  const Tensor t = Tensor::from_values(x, {400, 500}, DType::f32);
  const int threads = num_threads();
  for (const char* op : {"sum", "logsumexp"}) {
    const auto run = [&] { return std::string(op) == "sum" ? sum(t, {}) : logsumexp(t, {}); };
    set_num_threads(1);
    const double one = run().to_f64_vector().at(0);
    set_num_threads(2);
    reset_routes();
    EXPECT_EQ(run().to_f64_vector().at(0), one) << op;
    ASSERT_EQ(implementations_taken(op).size(), 1u);
    EXPECT_NE(implementations_taken(op)[0].find(".rows"), std::string::npos) << op;
  }
  set_num_threads(threads);
}

TEST(Reduce, RunsOfAxesTakeTheRowAndColumnKernelsAndOthersThePortablePath) {
  const Tensor t = Tensor::from_values(std::vector<double>(4 * 5 * 6, 1.0), {4, 5, 6}, DType::f32);
  const auto taken = [&](const std::vector<int64_t>& axes) {
    reset_routes();
    (void)max(t, axes);
    return implementations_taken("max").at(0);
  };
  EXPECT_NE(taken({2}).find(".rows"), std::string::npos);
  EXPECT_NE(taken({1, 2}).find(".rows"), std::string::npos);
  EXPECT_NE(taken({}).find(".rows"), std::string::npos);
  EXPECT_NE(taken({1}).find(".columns"), std::string::npos);
  EXPECT_NE(taken({0, 1}).find(".columns"), std::string::npos);
  EXPECT_EQ(taken({0, 2}), "portable");
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
