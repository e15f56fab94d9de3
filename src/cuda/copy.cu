// Fills and strided copies on a device: the kernels behind Tensor::fill, clone() and contiguous().
// Not an elementwise op: bytes move, no arithmetic, no dtype change.
#include <cstring>

#include "core/element_size.h"
#include "cuda/launch.h"

namespace dew::cuda {
namespace {

template <class E>
__global__ void fill_kernel(E* dst, E value, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = value;
}

struct Geometry {
  int64_t shape[kMaxRank];
  int64_t src_strides[kMaxRank];
  int64_t dst_strides[kMaxRank];
  int rank;
};

// One thread per element: its row-major index decomposed into coordinates, then into both offsets.
template <class E>
__global__ void copy_strided_kernel(const E* src, E* dst, Geometry g, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, so = 0, dof = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t c = rest % g.shape[d];
      rest /= g.shape[d];
      so += c * g.src_strides[d];
      dof += c * g.dst_strides[d];
    }
    dst[dof] = src[so];
  }
}

constexpr int kThreads = 256;

}  // namespace

void fill(int device, void* dst, const void* pattern, size_t element_size, int64_t n) {
  if (n == 0) return;
  use_device(device);
  dew::detail::visit_element_size(element_size, [&](auto zero) {
    using E = decltype(zero);
    E value;
    std::memcpy(&value, pattern, sizeof(E));
    fill_kernel<E>
        <<<blocks_for(n, kThreads), kThreads, 0, stream_of(device)>>>(static_cast<E*>(dst), value, n);
    DEW_CUDA_CHECK_LAUNCH("fill_kernel");
  });
}

void copy_strided(int device, const void* src, const int64_t* src_strides, void* dst,
                  const int64_t* dst_strides, const int64_t* shape, int rank, size_t element_size) {
  Geometry g{};
  g.rank = rank;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    g.shape[d] = shape[d];
    g.src_strides[d] = src_strides[d];
    g.dst_strides[d] = dst_strides[d];
    n *= shape[d];
  }
  if (n == 0) return;
  use_device(device);
  dew::detail::visit_element_size(element_size, [&](auto zero) {
    using E = decltype(zero);
    copy_strided_kernel<E><<<blocks_for(n, kThreads), kThreads, 0, stream_of(device)>>>(
        static_cast<const E*>(src), static_cast<E*>(dst), g, n);
    DEW_CUDA_CHECK_LAUNCH("copy_strided_kernel");
  });
}

}  // namespace dew::cuda
