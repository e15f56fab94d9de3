// conv2d's own tests beyond OpSuite: values a reader can check by hand (a box filter, a strided and
// padded geometry, groups that never mix), the adjoint identity tying the three passes together at
// f64, the route taken, and refusals by name.
#include <dew/image_ops.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "error_of.h"
#include "ops/op.h"

namespace dew {
namespace {

using testing::error_of;

Tensor counting(const Shape& shape, DType t = DType::f32) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i % 7) - 3.0;
  return Tensor::from_values(v, shape, t);
}

TEST(Conv2d, ABoxFilterSumsEachPixelsPaddedNeighbourhood) {
  const Tensor x = counting({1, 1, 4, 5}), box = Tensor::full({1, 1, 3, 3}, 1.0, DType::f32);
  Conv2dOptions same;
  same.padding = {1, 1};
  const std::vector<double> y = conv2d(x, box, Tensor::full({1}, 0.5, DType::f32), same).to_f64_vector();
  const std::vector<double> xv = x.to_f64_vector();
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t s = 0; s < 5; ++s) {
      double want = 0.5;
      for (int64_t dr = -1; dr <= 1; ++dr)
        for (int64_t ds = -1; ds <= 1; ++ds)
          if (r + dr >= 0 && r + dr < 4 && s + ds >= 0 && s + ds < 5)
            want += xv[size_t((r + dr) * 5 + s + ds)];
      EXPECT_EQ(y[size_t(r * 5 + s)], want) << r << "," << s;
    }
}

TEST(Conv2d, StrideAndPaddingGiveTorchsOutputSize) {
  Conv2dOptions down;
  down.stride = {2, 2}, down.padding = {1, 1};
  EXPECT_EQ(conv2d(counting({2, 3, 28, 28}), counting({8, 3, 3, 3}), Tensor(), down).shape(),
            Shape({2, 8, 14, 14}));
  EXPECT_EQ(conv2d(counting({2, 3, 7, 7}), counting({8, 3, 3, 3}), Tensor(), down).shape(),
            Shape({2, 8, 4, 4}));
  Conv2dOptions dilated;
  dilated.dilation = {2, 3};
  EXPECT_EQ(conv2d(counting({1, 2, 9, 9}), counting({4, 2, 3, 3}), Tensor(), dilated).shape(),
            Shape({1, 4, 5, 3}));
}

TEST(Conv2d, GroupsNeverMixChannelsOfOtherGroups) {
  Conv2dOptions two;
  two.groups = 2;
  const Tensor w = counting({4, 2, 1, 1});
  Tensor x = counting({1, 4, 3, 3});
  const std::vector<double> before = conv2d(x, w, Tensor(), two).to_f64_vector();
  // Changing the second group's input channels (2, 3) leaves the first group's outputs (0, 1) alone.
  std::vector<double> xv = x.to_f64_vector();
  for (size_t i = 18; i < 36; ++i) xv[i] += 1.0;
  const std::vector<double> after =
      conv2d(Tensor::from_values(xv, {1, 4, 3, 3}, DType::f32), w, Tensor(), two).to_f64_vector();
  for (size_t i = 0; i < 18; ++i) EXPECT_EQ(after[i], before[i]);
  EXPECT_NE(after[20], before[20]);
}

// <dy, conv2d(x, w)> = <input_grad(dy, w), x> = <weight_grad(dy, x), w> in f64 (the rules rely on it).
TEST(Conv2d, TheThreePassesAreAdjoints) {
  Conv2dOptions o;
  o.stride = {2, 1}, o.padding = {1, 2}, o.dilation = {1, 2}, o.groups = 2;
  const Tensor x = ops::random_input({2, 4, 7, 6}, DType::f64, {3, 1});
  const Tensor w = ops::random_input({6, 2, 3, 2}, DType::f64, {3, 2});
  const Tensor y = conv2d(x, w, Tensor(), o);
  const Tensor dy = ops::random_input(y.shape(), DType::f64, {3, 3});
  auto dot = [](const Tensor& a, const Tensor& b) { return sum(mul(a, b)).to_f64_vector()[0]; };
  const double lhs = dot(dy, y);
  EXPECT_NEAR(dot(conv2d_input_grad(dy, w, x.shape(), o), x), lhs, 1e-12 * std::abs(lhs) + 1e-12);
  EXPECT_NEAR(dot(conv2d_weight_grad(dy, x, w.shape(), o), w), lhs, 1e-12 * std::abs(lhs) + 1e-12);
}

TEST(Conv2d, AStridedViewConvolvesAsItsContiguousCopy) {
  const Tensor view =
      counting({2, 5, 5, 4}).permute({0, 3, 1, 2});  // (2,4,5,5), channels innermost in memory
  ASSERT_FALSE(view.is_contiguous());
  const Tensor w = counting({3, 4, 3, 3});
  Conv2dOptions same;
  same.padding = {1, 1};
  EXPECT_EQ(conv2d(view, w, Tensor(), same).to_f64_vector(),
            conv2d(view.contiguous(), w, Tensor(), same).to_f64_vector());
  const Tensor dy = counting({2, 3, 5, 5});
  EXPECT_EQ(conv2d_weight_grad(dy, view, w.shape(), same).to_f64_vector(),
            conv2d_weight_grad(dy, view.contiguous(), w.shape(), same).to_f64_vector());
}

TEST(Conv2d, F32RunsOnOneDnn) {
  reset_routes();
  conv2d(counting({2, 4, 8, 8}), counting({4, 4, 3, 3}));
  std::string ran;
  for (const RouteRecord& r : routes())
    if (r.op == "conv2d") ran = r.implementation;
  EXPECT_EQ(ran, "cpu.onednn");
}

TEST(Conv2d, BadShapesAreRefusedByName) {
  EXPECT_NE(error_of([] {
              conv2d(counting({1, 3, 8, 8}), counting({4, 2, 3, 3}));
            }).find("expected 3 channels per group"),
            std::string::npos);
  Conv2dOptions three;
  three.groups = 3;
  EXPECT_NE(error_of([&] {
              conv2d(counting({1, 4, 8, 8}), counting({6, 1, 3, 3}), Tensor(), three);
            }).find("expected groups >= 1 dividing both"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              conv2d(counting({1, 1, 2, 2}), counting({1, 1, 3, 3}));
            }).find("leaves no output"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              conv2d(counting({3, 8, 8}), counting({1, 3, 3, 3}));
            }).find("expected (B,C,H,W)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              conv2d(counting({1, 1, 4, 4}), counting({2, 1, 3, 3}), counting({3}));
            }).find("expected (2) on the forward pass"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
