// short_conv's own tests beyond OpSuite: nn.Conv1d's values written out, a sequence in pieces through
// the cache equal to it whole (decode), and refusals by name.
#include <dew/ops.h>
#include <dew/recurrence_ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"

namespace dew {
namespace {

TEST(ShortConv, ValuesAreACausalDepthwiseConv1d) {
  // One channel, W = 3: y[t] = b + w0 x[t-2] + w1 x[t-1] + w2 x[t], zeros before t = 0.
  const Tensor x = Tensor::from_values({1, 2, 3, 4}, {1, 4, 1}, DType::f64);
  const Tensor w = Tensor::from_values({0.5, -1, 2}, {1, 3}, DType::f64);
  const Tensor b = Tensor::from_values({10}, {1}, DType::f64);
  EXPECT_EQ(short_conv(x, w, b).to_f64_vector(), (std::vector<double>{12, 13, 14.5, 16}));
  // With the two inputs before t = 0 given (a cache): x[-2] = 5, x[-1] = 6.
  const Tensor before = Tensor::from_values({5, 6}, {1, 2, 1}, DType::f64);
  EXPECT_EQ(short_conv(x, w, b, before).to_f64_vector(), (std::vector<double>{8.5, 16, 14.5, 16}));
}

TEST(ShortConv, APrefillThenSingleStepsThroughTheCacheEqualTheWhole) {
  Tensor x = Tensor::empty({2, 9, 5}, DType::f32), w = Tensor::empty({5, 4}, DType::f32);
  fill_normal(x, {3, 0, 0}, 0, 1);
  fill_normal(w, {3, 1, 0}, 0, 1);
  const Tensor whole = short_conv(x, w);
  std::vector<Tensor> parts{short_conv(x.slice(1, 0, 5).contiguous(), w)};
  for (int64_t t = 5; t < 9; ++t)  // the cache: the last W - 1 = 3 inputs
    parts.push_back(short_conv(x.slice(1, t, t + 1).contiguous(), w, {}, x.slice(1, t - 3, t).contiguous()));
  EXPECT_EQ(concat(parts, 1).to_f64_vector(), whole.to_f64_vector());
}

TEST(ShortConv, PackedDocumentsEqualSeparateCalls) {
  // Documents of 2, 5 and 3 tokens in one row: no window reaches back past its document's start.
  Tensor x = Tensor::empty({1, 10, 6}, DType::f32), w = Tensor::empty({6, 4}, DType::f32);
  fill_normal(x, {5, 0, 0}, 0, 1);
  fill_normal(w, {5, 1, 0}, 0, 1);
  const Tensor segments = Tensor::from_values({4, 4, 1, 1, 1, 1, 1, 4, 4, 4}, {1, 10}, DType::i64);
  std::vector<Tensor> docs;
  for (auto [t0, t1] : {std::pair{0, 2}, {2, 7}, {7, 10}})
    docs.push_back(short_conv(x.slice(1, t0, t1).contiguous(), w));
  EXPECT_EQ(short_conv(x, w, {}, {}, segments).to_f64_vector(), concat(docs, 1).to_f64_vector());
}

TEST(ShortConv, BadArgumentsAreRefusedByName) {
  const Tensor x = Tensor::zeros({2, 3, 4}, DType::f32);
  EXPECT_NE(testing::error_of([&] {
              short_conv(x, Tensor::zeros({3, 4}, DType::f32));
            }).find("expected f32[4,W] (C,W)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              short_conv(x, Tensor::zeros({4, 4}, DType::f32), {}, Tensor::zeros({2, 4, 4}, DType::f32));
            }).find("expected f32[2,3,4] (B,W-1,C)"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
