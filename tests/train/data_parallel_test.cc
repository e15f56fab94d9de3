// The parts of a data-parallel step (train/data_parallel.h) in one process: the gradient tree adds its
// leaves in exactly fixed_tree_sum's order for any leaf count, batch_rows takes a group's rows, and
// row groups that cannot meet the one-process tree are refused. The ranks themselves are run by
// tests/cli/data_parallel_cli_test.cc.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/parallel.h>
#include <gtest/gtest.h>

#include <random>

#include "train/data_parallel.h"

namespace dew::train {
namespace {

// Leaves of random values of very different magnitudes, so that another order of the additions would
// round differently.
std::vector<std::vector<float>> random_leaves(int count, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-12, 12);
  std::vector<std::vector<float>> leaves(static_cast<size_t>(count),
                                         std::vector<float>(static_cast<size_t>(n)));
  for (auto& leaf : leaves)
    for (float& x : leaf) x = std::ldexp(mantissa(rng), exponent(rng));
  return leaves;
}

TEST(GradientTree, AddsLeavesInTheFixedTreesOrderForAnyCount) {
  const int64_t n = 257;
  for (int count = 1; count <= 9; ++count) {
    const std::vector<std::vector<float>> leaves = random_leaves(count, n, uint32_t(count));
    Tensor w = Tensor::zeros({n}, DType::f32);
    w.requires_grad_();
    const std::vector<Param> params = {{.name = "w", .tensor = w}};
    GradientTree tree(params);
    for (size_t l = 0; l < leaves.size(); ++l) {
      // d/dw sum(w * leaf) = leaf, exactly.
      backward(sum(mul(
          w, Tensor::from_values(std::vector<double>(leaves[l].begin(), leaves[l].end()), {n}, DType::f32))));
      if (l + 1 == leaves.size()) break;  // the last leaf stays in .grad for finish()
      tree.add_leaf();
      EXPECT_FALSE(w.grad().defined()) << "add_leaf takes the gradient";
    }
    tree.finish();
    std::vector<const float*> parts;
    for (const auto& leaf : leaves) parts.push_back(leaf.data());
    std::vector<float> expected(static_cast<size_t>(n));
    parallel::fixed_tree_sum(parts, expected.data(), n);
    const Tensor g = w.grad();
    ASSERT_TRUE(g.defined());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(g.data<float>()[i], expected[size_t(i)]) << count << " leaves, element " << i;
  }
}

TEST(GradientTree, AParameterWithoutAGradientInALeafCountsAsZeros) {
  Tensor used = Tensor::zeros({3}, DType::f32), unused = Tensor::zeros({2}, DType::f32);
  used.requires_grad_(), unused.requires_grad_();
  const std::vector<Param> params = {{.name = "used", .tensor = used}, {.name = "unused", .tensor = unused}};
  GradientTree tree(params);
  backward(sum(mul(used, Tensor::from_values({1, 2, 3}, {3}, DType::f32))));
  tree.add_leaf();
  backward(sum(mul(unused, Tensor::from_values({4, 5}, {2}, DType::f32))));
  tree.finish();
  EXPECT_EQ(used.grad().to_f64_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(unused.grad().to_f64_vector(), (std::vector<double>{4, 5}));
}

TEST(BatchRows, TakesAGroupsRowsAndCountsItsRealTokensAndImages) {
  data::Batch batch;
  batch.index = 7;
  batch.tokens = Tensor::from_values({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, DType::i64);
  batch.segment_ids = Tensor::from_values({1, 1, 1, 1, 2, 0, 0, 0}, {4, 2}, DType::i64);
  const data::Batch second = batch_rows(batch, 1, 2);
  EXPECT_EQ(second.index, 7);
  EXPECT_EQ(second.tokens.to_f64_vector(), (std::vector<double>{5, 6, 7, 8}));
  EXPECT_EQ(second.real_tokens, 1);
  EXPECT_EQ(batch_rows(batch, 0, 2).real_tokens, 4);

  data::Batch images;
  images.images = Tensor::zeros({6, 1, 2, 2}, DType::f32);
  images.labels = Tensor::from_values({0, 1, 2, 0, -1, -1}, {6}, DType::i64);
  images.real_rows = 4;
  EXPECT_EQ(batch_rows(images, 0, 3).real_rows, 2);
  EXPECT_EQ(batch_rows(images, 1, 3).real_rows, 2);
  EXPECT_EQ(batch_rows(images, 2, 3).real_rows, 0);
  EXPECT_EQ(batch_rows(images, 2, 3).labels.to_f64_vector(), (std::vector<double>{-1, -1}));
  try {
    batch_rows(images, 0, 4);
    ADD_FAILURE() << "6 rows in 4 groups";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch size that is a multiple of the row groups"),
              std::string::npos)
        << e.what();
  }
}

TEST(RowGroups, RefusedWhenTheRanksSumsCouldNotMeetTheOneProcessTree) {
  EXPECT_NO_THROW(check_row_groups(6, 1));  // one process: any count
  EXPECT_NO_THROW(check_row_groups(8, 2));
  EXPECT_NO_THROW(check_row_groups(6, 3));  // 2 per rank
  EXPECT_THROW(check_row_groups(3, 2), Error);
  EXPECT_THROW(check_row_groups(6, 2), Error);  // 3 per rank
  EXPECT_THROW(check_row_groups(0, 1), Error);
}

}  // namespace
}  // namespace dew::train
