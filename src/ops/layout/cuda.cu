// tril/triu's zeroing on CUDA: one thread per element; all-zero bits are 0 in every dtype.
#include "cuda/launch.h"
#include "ops/layout/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

__global__ void zero_triangle_kernel(char* data, size_t element_size, int64_t n, int64_t R, int64_t C,
                                     int64_t diagonal, bool lower) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % C, i = (e / C) % R;
    if (lower ? j > i + diagonal : j < i + diagonal)
      for (size_t b = 0; b < element_size; ++b) data[size_t(e) * element_size + b] = 0;
  }
}

}  // namespace

void zero_triangle(int device, size_t element_size, void* data, int64_t mats, int64_t R, int64_t C,
                   int64_t diagonal, bool lower) {
  const int64_t n = mats * R * C;
  if (n == 0) return;
  cuda::use_device(device);
  zero_triangle_kernel<<<cuda::blocks_for(n, 256), 256, 0, cuda::stream_of(device)>>>(
      static_cast<char*>(data), element_size, n, R, C, diagonal, lower);
  DEW_CUDA_CHECK_LAUNCH("zero_triangle_kernel");
}

}  // namespace dew::ops::cuda_kernels
