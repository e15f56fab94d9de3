// softmax and log_softmax on f32 outputs large enough to be written with non-temporal stores (NOTE
// [streaming large outputs], 64 MB and up), which the gate's small cases never reach: the streamed rows
// must equal, bit for bit, the same rows computed in a call small enough for ordinary stores.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

namespace dew {
namespace {

// 16,400 rows of 1,027 (a row length that is not a multiple of 16, so rows start at every alignment):
// 67 MB of output.
TEST(SoftmaxStreaming, RowsEqualTheirUnstreamedSelves) {
  const int64_t rows = 16400, n = 1027, part = 40;
  Tensor x = Tensor::empty({rows, n}, DType::f32);
  fill_normal(x, RandomKey{2026, 1201}, 0.0, 4.0);
  ASSERT_GE(rows * n * 4, int64_t(64) << 20) << "the whole call must stream";
  for (bool log : {false, true}) {
    const Tensor whole = log ? log_softmax(x, -1) : softmax(x, -1);
    // Rows from the middle, where the streamed rows are not aligned as the copied slice's are.
    const Tensor slice = x.slice(0, 1001, 1001 + part).contiguous();
    const Tensor alone = log ? log_softmax(slice, -1) : softmax(slice, -1);
    EXPECT_EQ(whole.slice(0, 1001, 1001 + part).to_f64_vector(), alone.to_f64_vector())
        << (log ? "log_softmax" : "softmax");
  }
}

}  // namespace
}  // namespace dew
