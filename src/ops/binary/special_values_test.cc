// Binary functions at the inputs the gate's random draws never reach: NaN in either or both operands,
// infinities and signed zeros, on every implementation this CPU runs and in every floating dtype, for
// rows long enough for the vector loops and their tails. Each result against binary_apply's rule in
// float, rounded once to the dtype (NaN propagates through maximum and minimum, a's first; comparisons
// with NaN are false but ne; pow is libm's powf).
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/binary/binary.h"
#include "ops/binary/scalar.h"

namespace dew {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// binary_apply's result for T inputs (held exactly in double): computed in float, as every
// implementation computes bf16 and f16, and rounded once to the dtype.
template <ops::BinaryFn F>
double expected(double a, double b, DType dtype) {
  const double r = double(ops::binary_apply<F>(float(a), float(b)));
  if constexpr (F >= ops::BinaryFn::eq) return r;
  return Tensor::from_values({r}, {1}, dtype).to_f64_vector()[0];
}

template <ops::BinaryFn F>
void check_everywhere(Tensor (*fn)(const Tensor&, const Tensor&)) {
  const std::vector<double> values = {kNan, -kInf, -2.5, -1e-40, -0.0, 0.0, 1e-40, 1.0, 3.0, kInf};
  std::vector<double> a, b;  // every pair, then again shifted so pairs fall in vector bodies and tails
  for (int repeat = 0; repeat < 2; ++repeat)
    for (double x : values)
      for (double y : values) a.push_back(x), b.push_back(y);
  a.push_back(1.0), b.push_back(kNan);  // an odd length: a tail on every vector width
  const int64_t n = int64_t(a.size());
  const std::string op(ops::binary_name(F));
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    const Tensor ta = Tensor::from_values(a, {n}, dtype), tb = Tensor::from_values(b, {n}, dtype);
    const std::vector<double> as = ta.to_f64_vector(), bs = tb.to_f64_vector();  // 1e-40 is 0 in f16
    for (const select::Verdict& v : ops::Binary::registry().explain(ops::BinaryArgs{ta, tb, F})) {
      if (!v.eligible) continue;
      set_impl_overrides(op + ":" + v.implementation);
      const std::vector<double> got = fn(ta, tb).to_f64_vector();
      set_impl_overrides("");
      for (int64_t i = 0; i < n; ++i) {
        const double want = expected<F>(as[size_t(i)], bs[size_t(i)], dtype);
        const std::string what = op + "(" + std::to_string(as[size_t(i)]) + ", " +
                                 std::to_string(bs[size_t(i)]) + ") on " + v.implementation + " " +
                                 std::string(dtype_name(dtype));
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got[size_t(i)])) << what << ": got " << got[size_t(i)];
        } else {
          EXPECT_EQ(got[size_t(i)], want) << what;
          EXPECT_EQ(std::signbit(got[size_t(i)]), std::signbit(want)) << what << ": the sign of zero";
        }
      }
    }
  }
}

TEST(BinarySpecialValues, MaximumAndMinimumPropagateNaNAndKeepTheirZeros) {
  check_everywhere<ops::BinaryFn::maximum>(maximum);
  check_everywhere<ops::BinaryFn::minimum>(minimum);
}

TEST(BinarySpecialValues, ArithmeticOnInfinitiesAndNaN) {
  check_everywhere<ops::BinaryFn::add>(add);
  check_everywhere<ops::BinaryFn::sub>(sub);
  check_everywhere<ops::BinaryFn::mul>(mul);
  check_everywhere<ops::BinaryFn::div>(div);
}

// pow: the tiers compute exp(b ln a) for positive finite a and finite b and hand the rest to std::pow
// (src/ops/binary/pow.h): negative bases (-2.5^3, subnormal ones too), zeros, infinities, NaN (1^NaN =
// NaN^0 = 1).
TEST(BinarySpecialValues, PowAtZerosInfinitiesNaNAndNegativeBases) {
  check_everywhere<ops::BinaryFn::pow>(pow);
}

TEST(BinarySpecialValues, ComparisonsWithNaNInfinitiesAndZeros) {
  check_everywhere<ops::BinaryFn::eq>(eq);
  check_everywhere<ops::BinaryFn::ne>(ne);
  check_everywhere<ops::BinaryFn::lt>(lt);
  check_everywhere<ops::BinaryFn::le>(le);
  check_everywhere<ops::BinaryFn::gt>(gt);
  check_everywhere<ops::BinaryFn::ge>(ge);
}

}  // namespace
}  // namespace dew
