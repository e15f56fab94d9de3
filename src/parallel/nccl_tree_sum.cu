// fixed_tree_sum_on_device (nccl_tree_sum.h): one thread per element, the parts' level-by-level pairs.
#include "cuda/launch.h"
#include "parallel/nccl_tree_sum.h"

namespace dew::parallel {
namespace {

__device__ inline float add_rounded(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ inline double add_rounded(double a, double b) {
  return __dadd_rn(a, b);
}

template <class T>
__global__ void tree_sum_kernel(const T* parts, int count, int64_t n, T* out) {
  T level[kMaxDeviceTreeParts];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    for (int p = 0; p < count; ++p) level[p] = parts[int64_t(p) * n + i];
    for (int width = count; width > 1; width = (width + 1) / 2) {
      for (int k = 0; k < width / 2; ++k) level[k] = add_rounded(level[2 * k], level[2 * k + 1]);
      if (width % 2) level[width / 2] = level[width - 1];  // the odd last part moves up
    }
    out[i] = level[0];
  }
}

}  // namespace

void fixed_tree_sum_on_device(const void* parts, int count, int64_t n, void* out, bool f64, void* stream) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const auto s = static_cast<cudaStream_t>(stream);
  if (f64)
    tree_sum_kernel<double><<<cuda::blocks_for(n, kThreads), kThreads, 0, s>>>(static_cast<const double*>(parts),
                                                                               count, n, static_cast<double*>(out));
  else
    tree_sum_kernel<float><<<cuda::blocks_for(n, kThreads), kThreads, 0, s>>>(static_cast<const float*>(parts),
                                                                              count, n, static_cast<float*>(out));
  DEW_CUDA_CHECK_LAUNCH("tree_sum_kernel");
}

}  // namespace dew::parallel
