// for_each_row: the rows (and pieces of long rows) it hands an elementwise kernel cover the output once,
// with each input's view at the right element, and one long row spreads over the threads.
#include <dew/runtime.h>
#include <dew/tensor.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "ops/elementwise.h"

namespace dew {
namespace {

// Every output element written once, from the input element at the same index (a broadcast input's at
// its own index), for a shape of `rows` rows of `length`.
void expect_rows_cover(int64_t rows, int64_t length) {
  Tensor a = Tensor::empty({rows, length}, DType::f32), b = Tensor::empty({1, length}, DType::f32);
  float* pa = a.data<float>();
  for (int64_t i = 0; i < rows * length; ++i) pa[i] = float(i);
  for (int64_t j = 0; j < length; ++j) b.data<float>()[j] = float(-j);
  std::vector<int> seen(size_t(rows * length), 0);
  std::vector<float> from_a(seen.size()), from_b(seen.size());
  ops::for_each_row<2>(a.shape(), {a, b}, [&](const ops::RowView<2>& v, int64_t o) {
    for (int64_t i = 0; i < v.length; ++i) {
      ++seen[size_t(o + i)];
      from_a[size_t(o + i)] = static_cast<const float*>(v.in[0])[i * v.stride[0]];
      from_b[size_t(o + i)] = static_cast<const float*>(v.in[1])[i * v.stride[1]];
    }
  });
  for (int64_t i = 0; i < rows * length; ++i) {
    ASSERT_EQ(seen[size_t(i)], 1) << "element " << i;
    ASSERT_EQ(from_a[size_t(i)], float(i)) << "element " << i;
    ASSERT_EQ(from_b[size_t(i)], float(-(i % length))) << "element " << i;
  }
}

TEST(ElementwiseRows, ShortAndLongRowsCoverTheOutputOnce) {
  expect_rows_cover(7, 5);
  expect_rows_cover(1, 3 * ops::kRowPiece + 17);  // pieces, the last one short
  expect_rows_cover(3, 2 * ops::kRowPiece);       // pieces that end where rows do
}

TEST(ElementwiseRows, OneLongRowRunsOnEveryThread) {
  const int before = num_threads();
  set_num_threads(2);
  Tensor x = Tensor::empty({8 * ops::kRowPiece}, DType::f32);
  std::mutex m;
  std::set<std::thread::id> threads;
  // Each piece waits (10 s at most) for a second thread to come: pieces all in one chunk would wait
  // alone, and a caller may run a sleeping worker's chunk only once its own is done.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ops::for_each_row<1>(x.shape(), {x}, [&](const ops::RowView<1>&, int64_t) {
    {
      std::lock_guard<std::mutex> lock(m);
      threads.insert(std::this_thread::get_id());
    }
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(m);
        if (threads.size() >= 2) break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::yield();
    }
  });
  set_num_threads(before);
  EXPECT_EQ(threads.size(), 2u);
}

}  // namespace
}  // namespace dew
