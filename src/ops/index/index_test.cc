// Indexing ops beyond OpSuite: hand-checked values, range errors, thread-count independence.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

using testing::error_of;

TEST(Index, EmbeddingGathersRowsAndRefusesOutOfRangeIds) {
  Tensor w = Tensor::from_values({0, 1, 10, 11, 20, 21}, {3, 2}, DType::f32);
  Tensor ids = Tensor::from_values({2, 0, 2}, {3}, DType::i64);
  EXPECT_EQ(embedding(w, ids).to_f64_vector(), (std::vector<double>{20, 21, 0, 1, 20, 21}));
  Tensor bad = Tensor::from_values({1, 3}, {2}, DType::i64);
  EXPECT_NE(error_of([&] { embedding(w, bad); }).find("[embedding] index[1] is 3; expected 0 <= index < 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { embedding(w, Tensor::zeros({2}, DType::i32)); }).find("expected i64"),
            std::string::npos);
}

TEST(Index, GatherScatterAddAndOneHotMatchTorchSemantics) {
  Tensor x = Tensor::from_values({1, 2, 3, 4}, {2, 2}, DType::f32);
  Tensor idx = Tensor::from_values({0, 0, 1, 0}, {2, 2}, DType::i64);
  EXPECT_EQ(gather(x, 1, idx).to_f64_vector(), (std::vector<double>{1, 1, 4, 3}));  // torch.gather(x, 1, idx)
  Tensor src = Tensor::from_values({10, 20, 30, 40}, {2, 2}, DType::f32);
  EXPECT_EQ(scatter_add(x, 1, idx, src).to_f64_vector(), (std::vector<double>{31, 2, 43, 34}));
  EXPECT_EQ(one_hot(Tensor::from_values({2, 0}, {2}, DType::i64), 3).to_f64_vector(),
            (std::vector<double>{0, 0, 1, 1, 0, 0}));
}

TEST(Index, EmbeddingBackwardIsIdenticalAtOneAndTwoThreads) {
  Tensor d = Tensor::empty({512, 96}, DType::f32);
  fill_normal(d, {3, 0, 0}, 0, 1);
  Tensor ids = Tensor::empty({512}, DType::i64);
  fill_randint(ids, {3, 1, 0}, 0, 17);
  int before = num_threads();
  set_num_threads(1);
  auto one = embedding_backward(d, ids, 17).to_f64_vector();
  set_num_threads(2);
  auto two = embedding_backward(d, ids, 17).to_f64_vector();
  set_num_threads(before);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace dew
