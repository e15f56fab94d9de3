// Layout ops beyond OpSuite: hand-checked values and refusals.
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

using testing::error_of;

TEST(Layout, PadFollowsTorchOrderAndSplitInvertsConcat) {
  Tensor x = Tensor::from_values({1, 2, 3, 4}, {2, 2}, DType::f32);
  // (left 1, right 0) on the last dim, (top 0, bottom 1) on the first
  EXPECT_EQ(pad(x, {1, 0, 0, 1}, 9).to_f64_vector(), (std::vector<double>{9, 1, 2, 9, 3, 4, 9, 9, 9}));
  Tensor c = concat({x, x.slice(0, 0, 1)}, 0);
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  auto parts = split(c, {2, 1}, 0);
  EXPECT_EQ(parts[0].to_f64_vector(), x.to_f64_vector());
  EXPECT_EQ(parts[1].to_f64_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(tril(Tensor::full({3, 3}, 1, DType::f32)).to_f64_vector(),
            (std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(arange(0, 1, 0.25, DType::f32).to_f64_vector(), (std::vector<double>{0, 0.25, 0.5, 0.75}));
}

TEST(Layout, RefusesMismatchedShapesAndSizes) {
  Tensor a = Tensor::zeros({2, 3}, DType::f32), b = Tensor::zeros({3, 3}, DType::f32);
  EXPECT_NE(error_of([&] { concat({a, b}, 1); }).find("differ off axis 1"), std::string::npos);
  EXPECT_NE(error_of([&] {
              split(a, {1, 1}, 1);
            }).find("sum to 2; expected the axis length 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { pad(a, {1, -1}); }).find("negative"), std::string::npos);
  EXPECT_NE(error_of([&] { arange(0, 1, 0, DType::f32); }).find("non-zero step"), std::string::npos);
}

}  // namespace
}  // namespace dew
