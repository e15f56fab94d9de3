// Iteration for elementwise ops: inputs broadcast to the output's shape (as views), walked row by row
// over the last dim, rows split across the thread pool. Each row hands the kernel a pointer and a
// stride per input, so contiguous rows run as plain loops the compiler vectorizes.
#pragma once

#include <dew/runtime.h>

#include <array>

namespace dew::ops {

template <size_t N>
struct RowView {
  std::array<const void*, N> in;
  std::array<int64_t, N> stride;  // elements; 0 for a broadcast input
  int64_t length;
};

// Calls row(RowView, out_offset) for every row of `shape` (out is contiguous).
template <size_t N, class RowFn>
void for_each_row(const Shape& shape, const std::array<Tensor, N>& inputs, RowFn row) {
  std::array<Tensor, N> views;
  for (size_t k = 0; k < N; ++k) views[k] = inputs[k].expand(shape);
  const int64_t total = numel_of(shape);
  if (total == 0) return;
  const int64_t length = shape.empty() ? 1 : shape.back();
  const int64_t rows = total / length;
  const size_t rank = shape.size();
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, length)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      RowView<N> v;
      v.length = length;
      for (size_t k = 0; k < N; ++k) {
        int64_t off = 0, rem = r;
        for (size_t d = rank == 0 ? 0 : rank - 1; d-- > 0;) {
          off += (rem % shape[d]) * views[k].strides()[d];
          rem /= shape[d];
        }
        v.in[k] = static_cast<const char*>(views[k].raw_data()) + off * int64_t(dtype_size(views[k].dtype()));
        v.stride[k] = rank == 0 ? 0 : views[k].strides()[rank - 1];
      }
      row(v, r * length);
    }
  });
}

}  // namespace dew::ops
