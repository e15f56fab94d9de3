// group_norm's own tests beyond OpSuite: one group is layer_norm over each image's (C,H,W), groups of
// one channel normalize each channel alone, the weight and bias act per channel; refusals by name.
#include <dew/image_ops.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "error_of.h"
#include "ops/op.h"

namespace dew {
namespace {

using testing::error_of;

TEST(GroupNorm, OneGroupIsLayerNormOverEachImage) {
  const Tensor x = ops::random_input({3, 4, 5, 2}, DType::f64, {7, 1});
  const Tensor y = group_norm(x, 1);
  const Tensor want = layer_norm(x.reshape({3, 40}), Tensor(), Tensor(), 1e-5).y;
  EXPECT_EQ(y.to_f64_vector(), want.to_f64_vector());
}

TEST(GroupNorm, EachGroupHasMeanZeroAndTheWeightAndBiasActPerChannel) {
  const Tensor x = ops::random_input({2, 6, 3, 3}, DType::f64, {7, 2});
  const Tensor w = Tensor::from_values({1, 1, 1, 2, 2, 2}, {6}, DType::f64);
  const Tensor b = Tensor::from_values({0, 0, 0, 5, 5, 5}, {6}, DType::f64);
  const std::vector<double> plain = group_norm(x, 2).to_f64_vector(),
                            affine = group_norm(x, 2, w, b).to_f64_vector();
  for (int64_t img = 0; img < 2; ++img)
    for (int64_t g = 0; g < 2; ++g) {
      double s = 0, squares = 0;
      for (int64_t i = 0; i < 27; ++i) {
        const size_t k = size_t(img * 54 + g * 27 + i);
        s += plain[k], squares += plain[k] * plain[k];
        EXPECT_NEAR(affine[k], plain[k] * (g ? 2.0 : 1.0) + (g ? 5.0 : 0.0), 1e-12);
      }
      EXPECT_NEAR(s, 0.0, 1e-12);
      EXPECT_NEAR(squares / 27.0, 1.0, 1e-4);  // unit variance up to eps
    }
}

TEST(GroupNorm, BadGroupsAndWeightsAreRefusedByName) {
  const Tensor x = ops::random_input({1, 6, 2, 2}, DType::f32, {7, 3});
  EXPECT_NE(error_of([&] { group_norm(x, 4); }).find("4 groups over 6 channels; expected a divisor of 6"),
            std::string::npos);
  EXPECT_NE(error_of([&] { group_norm(x, 3, Tensor::full({4}, 1.0, DType::f32)); }).find("expected f32[6]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { group_norm(x.reshape({24}), 1); }).find("expected a floating (B,C,...)"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
