// Reductions across one thread block: warp shuffles, then one warp over the warps' partials. Every
// thread gets the result. For kernels that give a block one row. Blocks are a multiple of 32 threads.
#pragma once

#include <cuda_runtime.h>

#include "cuda/element.cuh"

namespace dew::cuda {

// Combine is associative; identity is its neutral element. `scratch` holds 32 values in shared memory;
// the call synchronizes, so scratch may be reused by the next call.
template <class T, class Combine>
__device__ T block_reduce(T v, Combine combine, T identity, T* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) v = combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : identity;
    for (int offset = 16; offset > 0; offset /= 2) v = combine(v, __shfl_down_sync(0xffffffffu, v, offset));
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}

template <class T>
__device__ T block_sum(T v, T* scratch) {
  return block_reduce(
      v, [](T a, T b) { return a + b; }, T(0), scratch);
}

// The larger, with NaN winning (as PyTorch's max).
template <class T>
__device__ T nan_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a > b ? a : b));
}

template <class T>
__device__ T block_max(T v, T* scratch) {
  return block_reduce(
      v, [](T a, T b) { return nan_max(a, b); }, T(-INFINITY), scratch);
}

// A row's maximum (NaN wins) and the sum of exp(x - max) over it, in W, across the block: the two
// reductions of a stable softmax. With an infinite or NaN maximum the sum means nothing; callers check.
template <class W>
struct MaxAndExpSum {
  W max, exp_sum;
};
template <class W, class T>
__device__ MaxAndExpSum<W> block_max_and_exp_sum(const T* row, int64_t n, W* scratch) {
  W m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = nan_max(m, W(widen(row[i])));
  m = block_max(m, scratch);
  W s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += exp(W(widen(row[i])) - m);
  return {m, block_sum(s, scratch)};
}

}  // namespace dew::cuda
