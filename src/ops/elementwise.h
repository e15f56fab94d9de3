// Iteration for elementwise ops: inputs broadcast to the output's shape (as views), walked row by row
// over the last dim (long rows in pieces), rows split across the thread pool. Each row hands the kernel a
// pointer and a stride per input, so contiguous rows run as plain loops the compiler vectorizes.
#pragma once

#include <dew/runtime.h>

#include <algorithm>
#include <array>

namespace dew::ops {

template <size_t N>
struct RowView {
  std::array<const void*, N> in;
  std::array<int64_t, N> stride;  // elements; 0 for a broadcast input
  int64_t length;
};

// Rows longer than this are handed to the kernel in pieces of it, so that a tensor of a few long rows
// still spreads over the threads: a flattened tensor is one row, which would otherwise run on one.
inline constexpr int64_t kRowPiece = 16384;

// Calls row(RowView, out_offset) for every row of `shape` (out is contiguous), or for each piece of
// kRowPiece elements of a longer row (its view and offset moved to the piece's first element).
template <size_t N, class RowFn>
void for_each_row(const Shape& shape, const std::array<Tensor, N>& inputs, RowFn row) {
  std::array<Tensor, N> views;
  for (size_t k = 0; k < N; ++k) views[k] = inputs[k].expand(shape);
  const int64_t total = numel_of(shape);
  if (total == 0) return;
  const int64_t length = shape.empty() ? 1 : shape.back();
  const int64_t rows = total / length, pieces = (length + kRowPiece - 1) / kRowPiece;
  const int64_t piece = pieces == 1 ? length : kRowPiece;
  const size_t rank = shape.size();
  parallel_for(rows * pieces, std::max<int64_t>(1, kRowPiece / piece), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t r = p / pieces, start = (p % pieces) * piece;
      RowView<N> v;
      v.length = std::min(piece, length - start);
      for (size_t k = 0; k < N; ++k) {
        v.stride[k] = rank == 0 ? 0 : views[k].strides()[rank - 1];
        int64_t off = start * v.stride[k], rem = r;
        for (size_t d = rank == 0 ? 0 : rank - 1; d-- > 0;) {
          off += (rem % shape[d]) * views[k].strides()[d];
          rem /= shape[d];
        }
        v.in[k] = static_cast<const char*>(views[k].raw_data()) + off * int64_t(dtype_size(views[k].dtype()));
      }
      row(v, r * length + start);
    }
  });
}

}  // namespace dew::ops
