// cast's integer and special-value semantics, which the gate's random draws do not reach.
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dew {
namespace {

TEST(Cast, FloatToIntegerTruncatesSaturatesAndSendsNanToZero) {
  Tensor x = Tensor::from_values({2.9, -2.9, 1e20, -1e20, std::nan(""), 0.5}, {6}, DType::f64);
  EXPECT_EQ(cast(x, DType::i32).to_f64_vector(),
            (std::vector<double>{2, -2, 2147483647.0, -2147483648.0, 0, 0}));
  EXPECT_EQ(cast(x, DType::boolean).to_f64_vector(), (std::vector<double>{1, 1, 1, 1, 1, 1}));
}

TEST(Cast, KeepsInfinityAndNanAcrossFloatTypes) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = Tensor::from_values({inf, -inf, std::nan(""), 1e6}, {4}, DType::f32);
  auto h = cast(x, DType::f16).to_f64_vector();
  EXPECT_EQ(h[0], inf);
  EXPECT_EQ(h[1], -inf);
  EXPECT_TRUE(std::isnan(h[2]));
  EXPECT_EQ(h[3], inf);  // beyond f16's range
}

TEST(Cast, StridedInputsAreReadInLogicalOrder) {
  Tensor x = Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32);
  EXPECT_EQ(cast(x.transpose(0, 1), DType::f64).to_f64_vector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

}  // namespace
}  // namespace dew
