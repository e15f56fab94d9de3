// Iteration over strided element offsets, and the same-dtype strided copy used by contiguous().
// Not an elementwise op: no arithmetic, no dtype change.
#pragma once

#include <dew/runtime.h>
#include <dew/tensor.h>

#include <algorithm>
#include <cstring>

#include "core/element_size.h"
#include "cuda/runtime.h"

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

// NOTE [copies over the threads]
// A copy is memory-bound, and one core reaches about half the memory's bandwidth: so copies of at least
// kCopyGrainBytes spread over the pool, in chunks of whole rows (the last dim) that do not depend on the
// thread count. A copy moves bits, so the result is the same whichever thread copies what.
inline constexpr int64_t kCopyGrainBytes = int64_t(256) << 10;

// Copies every element of src into dst (same shape and dtype, any strides), walking both in row-major
// order: the outer dims by an odometer started at each chunk's first row, the last dim as a typed loop
// with two strides.
inline void copy_strided(const Tensor& src, const Tensor& dst) {
  const size_t es = dtype_size(src.dtype());
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  if (src.device().kind == Device::Kind::cuda) {
    DEW_REQUIRE(dst.device() == src.device() && src.dim() <= cuda::kMaxRank,
                "[tensor] strided copy from {} to {}: expected one device and rank <= {}", src.describe(),
                dst.describe(), cuda::kMaxRank);
    cuda::copy_strided(src.device().index, s, src.strides().data(), d, dst.strides().data(),
                       src.shape().data(), int(src.dim()), es);
    return;
  }
  const int64_t n = src.numel();
  if (n == 0) return;
  if (src.is_contiguous() && dst.is_contiguous()) {
    const int64_t bytes = n * int64_t(es);
    parallel_for(bytes, kCopyGrainBytes,
                 [&](int64_t b0, int64_t b1) { std::memcpy(d + b0, s + b0, size_t(b1 - b0)); });
    return;
  }
  const Shape& shape = src.shape();
  const size_t rank = shape.size();
  const int64_t inner = rank ? shape[rank - 1] : 1;
  const int64_t ss = rank ? src.strides()[rank - 1] : 0, ds = rank ? dst.strides()[rank - 1] : 0;
  const int64_t grain_rows = std::max<int64_t>(1, kCopyGrainBytes / (inner * int64_t(es)));
  auto rows = [&](auto element) {
    using E = decltype(element);
    parallel_for(n / inner, grain_rows, [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> at(rank, 0);  // row r0's index in the outer dims, and its offsets
      int64_t so = 0, dof = 0;
      for (int64_t k = int64_t(rank) - 2, r = r0; k >= 0; --k) {
        at[size_t(k)] = r % shape[size_t(k)], r /= shape[size_t(k)];
        so += at[size_t(k)] * src.strides()[size_t(k)], dof += at[size_t(k)] * dst.strides()[size_t(k)];
      }
      for (int64_t row = r0; row < r1; ++row) {
        const E* sp = reinterpret_cast<const E*>(s) + so;
        E* dp = reinterpret_cast<E*>(d) + dof;
        for (int64_t j = 0; j < inner; ++j) dp[j * ds] = sp[j * ss];
        for (size_t k = rank - 1; k-- > 0;) {
          so += src.strides()[k], dof += dst.strides()[k];
          if (++at[k] < shape[k]) break;
          so -= src.strides()[k] * shape[k], dof -= dst.strides()[k] * shape[k];
          at[k] = 0;
        }
      }
    });
  };
  visit_element_size(es, rows);
}

}  // namespace dew::detail
