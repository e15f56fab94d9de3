// Iteration over strided element offsets, and the same-dtype strided copy used by contiguous().
// Not an elementwise op: no arithmetic, no dtype change.
#pragma once

#include <dew/tensor.h>

#include <cstring>

namespace dew::detail {

// Calls f(offset) for every element in row-major order; offsets are in elements from the view's start.
template <class F>
void for_each_offset(const Shape& shape, const Strides& strides, F&& f) {
  int64_t n = numel_of(shape);
  if (n == 0) return;
  size_t rank = shape.size();
  if (rank == 0) return f(int64_t{0});
  std::vector<int64_t> index(rank, 0);
  int64_t inner = shape[rank - 1], inner_stride = strides[rank - 1];
  int64_t base = 0;
  for (int64_t done = 0; done < n; done += inner) {
    for (int64_t j = 0; j < inner; ++j) f(base + j * inner_stride);
    for (size_t d = rank - 1; d-- > 0;) {
      base += strides[d];
      if (++index[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

inline void copy_strided(const Tensor& src, Tensor& dst) {
  size_t es = dtype_size(src.dtype());
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  if (src.is_contiguous()) {
    std::memcpy(d, s, size_t(src.numel()) * es);
    return;
  }
  int64_t i = 0;
  for_each_offset(src.shape(), src.strides(),
                  [&](int64_t off) { std::memcpy(d + (i++) * int64_t(es), s + off * int64_t(es), es); });
}

}  // namespace dew::detail
