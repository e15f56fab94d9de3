// Dims behaves as the std::vector<int64_t> it stands for, inline and past its inline capacity alike:
// random edits applied to both must leave them equal; copies and moves keep values; tensors of a rank past
// the inline capacity keep their geometry.
#include <dew/dims.h>
#include <dew/tensor.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace dew {
namespace {

void expect_same(const Dims& d, const std::vector<int64_t>& v) {
  ASSERT_EQ(d.size(), v.size());
  EXPECT_EQ(std::vector<int64_t>(d.begin(), d.end()), v);
  EXPECT_EQ(d, Dims(v));
}

TEST(Dims, RandomEditsMatchAVector) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Dims d;
    std::vector<int64_t> v;
    for (int op = 0; op < 40; ++op) {
      const int64_t value = int64_t(rng() % 1000) - 500;
      const size_t at = v.empty() ? 0 : size_t(rng() % (v.size() + 1));
      switch (rng() % 7) {
        case 0:
        case 1:
          d.push_back(value), v.push_back(value);
          break;
        case 2:
          d.insert(d.begin() + at, value), v.insert(v.begin() + ptrdiff_t(at), value);
          break;
        case 3:
          if (at < v.size()) d.erase(d.begin() + at), v.erase(v.begin() + ptrdiff_t(at));
          break;
        case 4: {
          const size_t n = size_t(rng() % 12);
          d.resize(n, value), v.resize(n, value);
          break;
        }
        case 5: {  // a range of its own values
          d.insert(d.begin() + at, d.begin(), d.begin() + ptrdiff_t(at));
          const std::vector<int64_t> head(v.begin(), v.begin() + ptrdiff_t(at));
          v.insert(v.begin() + ptrdiff_t(at), head.begin(), head.end());
          break;
        }
        case 6:
          if (!v.empty()) d.pop_back(), v.pop_back();
          break;
      }
      expect_same(d, v);
    }
  }
}

TEST(Dims, CopiesAndMovesKeepValuesOnEitherSideOfTheInlineCapacity) {
  for (size_t n : {size_t(0), size_t(3), Dims::kInline, Dims::kInline + 1, size_t(20)}) {
    std::vector<int64_t> v;
    for (size_t i = 0; i < n; ++i) v.push_back(int64_t(i * 3 + 1));
    const Dims original(v);
    Dims copy = original;
    expect_same(copy, v);
    Dims moved = std::move(copy);
    expect_same(moved, v);
    EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from Dims is empty and usable
    copy = moved;
    expect_same(copy, v);
    Dims assigned{9, 9};
    assigned = std::move(moved);
    expect_same(assigned, v);
    EXPECT_EQ(std::vector<int64_t>(original), v);
  }
}

TEST(Dims, OrdersLikeAVector) {
  EXPECT_LT(Dims({1, 2}), Dims({1, 3}));
  EXPECT_LT(Dims({1, 2}), Dims({1, 2, 0}));
  EXPECT_EQ(Dims({4, 5}), (std::vector<int64_t>{4, 5}));
  EXPECT_NE(Dims({4, 5}), Dims({4}));
}

TEST(Dims, ATensorOfHighRankKeepsItsGeometry) {
  Shape shape{2, 1, 3, 1, 2, 1, 2, 1};  // past the inline capacity: held on the heap
  std::vector<double> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = double(i);
  const Tensor t = Tensor::from_values(values, shape, DType::f32);
  EXPECT_EQ(t.shape(), shape);
  const Tensor p = t.permute({7, 6, 5, 4, 3, 2, 1, 0});
  EXPECT_EQ(p.shape(), (Shape{1, 2, 1, 2, 1, 3, 1, 2}));
  EXPECT_EQ(p.contiguous().permute({7, 6, 5, 4, 3, 2, 1, 0}).to_f64_vector(), values);
  EXPECT_EQ(t.reshape({4, 6}).to_f64_vector(), values);
}

}  // namespace
}  // namespace dew
