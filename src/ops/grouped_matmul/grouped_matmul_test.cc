// grouped_matmul's own tests beyond OpSuite: each group's rows equal a dense matmul of that group with
// its weights (integer values, so both are exact), an empty group writes zeros, gradients flow to both
// operands, and bad sizes and shapes are refused by name.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

using testing::error_of;

// Small integers as f32: every product and sum is exact.
Tensor integers(const Shape& shape, int seed) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(int((i * 7 + size_t(seed) * 13) % 9) - 4);
  return Tensor::from_values(v, shape, DType::f32);
}

TEST(GroupedMatmul, EachGroupIsItsDenseProduct) {
  const std::vector<int64_t> sizes{3, 0, 4, 1};
  const Tensor a = integers({8, 5}, 1), b = integers({4, 5, 6}, 2), bt = integers({4, 6, 5}, 3);
  const Tensor s = Tensor::from_values({3, 0, 4, 1}, {4}, DType::i64);
  const Tensor y = grouped_matmul(a, b, s), yt = grouped_matmul(a, bt, s, true);
  const Tensor dy = integers({8, 6}, 4), w = grouped_matmul_weight_grad(a, dy, s);
  int64_t row = 0;
  for (int64_t g = 0; g < 4; ++g) {
    const int64_t n = sizes[size_t(g)];
    if (n > 0) {
      const Tensor ag = a.slice(0, row, row + n);
      EXPECT_EQ(y.slice(0, row, row + n).to_f64_vector(), matmul(ag, b.select(0, g)).to_f64_vector()) << g;
      MatmulOptions tb;
      tb.transpose_b = true;
      EXPECT_EQ(yt.slice(0, row, row + n).to_f64_vector(), matmul(ag, bt.select(0, g), tb).to_f64_vector());
      MatmulOptions ta;
      ta.transpose_a = true;
      EXPECT_EQ(w.select(0, g).to_f64_vector(), matmul(ag, dy.slice(0, row, row + n), ta).to_f64_vector());
    } else {
      EXPECT_EQ(w.select(0, g).to_f64_vector(), std::vector<double>(5 * 6, 0.0))
          << "an empty group's gradient";
    }
    row += n;
  }
}

TEST(GroupedMatmul, GradientsReachBothOperands) {
  Tensor a = integers({8, 5}, 1).requires_grad_(), b = integers({4, 5, 6}, 2).requires_grad_();
  const Tensor s = Tensor::from_values({3, 0, 4, 1}, {4}, DType::i64);
  backward(sum(grouped_matmul(a, b, s)));
  ASSERT_TRUE(a.grad().defined() && b.grad().defined());
  // d sum / d b[g][k][n] = sum of column k over g's rows: group 1 has none.
  const std::vector<double> gb = b.grad().to_f64_vector();
  for (int64_t i = 30; i < 60; ++i) EXPECT_EQ(gb[size_t(i)], 0.0);
}

TEST(GroupedMatmul, RefusesBadSizesAndShapesNamingThem) {
  const Tensor a = Tensor::zeros({8, 5}, DType::f32), b = Tensor::zeros({4, 5, 6}, DType::f32);
  EXPECT_NE(error_of([&] {
              grouped_matmul(a, b, Tensor::from_values({3, 0, 4, 2}, {4}, DType::i64));
            }).find("[grouped_matmul] sizes sum to 9 rows but a has 8"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              grouped_matmul(a, b, Tensor::from_values({9, -1, 0, 0}, {4}, DType::i64));
            }).find("sizes[1] is -1"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              grouped_matmul(a, b, Tensor::from_values({8, 0}, {2}, DType::i64));
            }).find("b is f32[4,5,6]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              grouped_matmul(a, b, Tensor::from_values({3, 0, 4, 1}, {4}, DType::i64), true);
            }).find("expected (4,N,5) (transpose_b) for 4 groups of rows of width 5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              grouped_matmul(a, Tensor::zeros({4, 6, 6}, DType::f32),
                             Tensor::from_values({3, 0, 4, 1}, {4}, DType::i64));
            }).find("expected (4,5,N) for 4 groups of rows of width 5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              grouped_matmul(a, b, Tensor::from_values({3, 0, 4, 1}, {4}, DType::f32));
            }).find("expected the rows of each group as i64 (G)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              grouped_matmul_weight_grad(a, Tensor::zeros({7, 6}, DType::f32),
                                         Tensor::from_values({8}, {1}, DType::i64));
            }).find("expected (8,Q), a row for each of a's"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
