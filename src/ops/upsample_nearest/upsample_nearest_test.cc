// upsample_nearest's own tests beyond OpSuite: each pixel fills its f x f block, the gradient sums each
// block back, a bad factor or shape is refused by name.
#include <dew/autodiff.h>
#include <dew/image_ops.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

using testing::error_of;

TEST(UpsampleNearest, EachPixelFillsItsBlock) {
  const Tensor x = Tensor::from_values({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3}, DType::f32);
  const Tensor y = upsample_nearest(x, 2);
  ASSERT_EQ(y.shape(), Shape({1, 1, 4, 6}));
  EXPECT_EQ(y.to_f64_vector(), std::vector<double>({1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,  //
                                                    4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6}));
}

TEST(UpsampleNearest, TheGradientSumsEachBlock) {
  Tensor x = Tensor::from_values({1, 2, 3, 4}, {1, 1, 2, 2}, DType::f32);
  x.requires_grad_();
  std::vector<double> wv(16);
  for (size_t i = 0; i < 16; ++i) wv[i] = double(i);
  backward(sum(mul(upsample_nearest(x, 2), Tensor::from_values(wv, {1, 1, 4, 4}, DType::f32))));
  // pixel (0,0) feeds outputs 0, 1, 4, 5
  EXPECT_EQ(x.grad().to_f64_vector(),
            std::vector<double>({0 + 1 + 4 + 5, 2 + 3 + 6 + 7, 8 + 9 + 12 + 13, 10 + 11 + 14 + 15}));
}

TEST(UpsampleNearest, BadInputIsRefusedByName) {
  const Tensor x = Tensor::full({1, 1, 2, 2}, 1.0, DType::f32);
  EXPECT_NE(error_of([&] { upsample_nearest(x, 0); }).find("expected an integer factor >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { upsample_nearest(x.reshape({4}), 2); }).find("expected images (B,C,H,W)"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
