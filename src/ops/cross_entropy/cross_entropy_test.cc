// cross_entropy on f32 gradients large enough to be written with non-temporal stores (NOTE [streaming
// the gradient], 64 MB and up), which the gate's small cases never reach: the streamed rows must equal,
// bit for bit, the same rows computed in a call small enough for ordinary stores.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <vector>

namespace dew {
namespace {

// Logits of N rows of GPT-2's vocabulary in `dtype`; every row but the `counted` first ones has the
// ignored target, so the loss's denominator (the counted rows) is the same in the whole call and in a
// call over those rows alone.
void expect_streamed_rows_equal_cached_ones(DType dtype, int64_t N) {
  const int64_t V = 50257, counted = 6;
  Tensor logits = Tensor::empty({N, V}, DType::f32);
  fill_normal(logits, RandomKey{2026, 12}, 0.0, 3.0);
  logits = cast(logits, dtype);
  std::vector<double> ids(size_t(N), -100.0);
  for (int64_t r = 0; r < counted; ++r) ids[size_t(r)] = double((r * 7919) % V);
  const Tensor targets = Tensor::from_values(ids, {N}, DType::i64);
  ASSERT_GE(N * V * int64_t(dtype_size(dtype)), int64_t(64) << 20) << "the whole call must stream";

  const CrossEntropyResult whole = cross_entropy(logits, targets);
  const CrossEntropyResult part =
      cross_entropy(logits.slice(0, 0, counted).contiguous(), targets.slice(0, 0, counted).contiguous());
  EXPECT_EQ(whole.loss.to_f64_vector(), part.loss.to_f64_vector());
  EXPECT_EQ(whole.lse.slice(0, 0, counted).to_f64_vector(), part.lse.to_f64_vector());
  EXPECT_EQ(whole.d_logits.slice(0, 0, counted).to_f64_vector(), part.d_logits.to_f64_vector());
  // An ignored row's gradient is zero, written by the same streaming stores.
  const std::vector<double> last = whole.d_logits.slice(0, N - 1, N).to_f64_vector();
  EXPECT_EQ(last, std::vector<double>(size_t(V), 0.0));
}

TEST(CrossEntropyStreaming, F32RowsEqualTheirUnstreamedSelves) {
  expect_streamed_rows_equal_cached_ones(DType::f32, 336);  // 67.5 MB of gradient
}

}  // namespace
}  // namespace dew
