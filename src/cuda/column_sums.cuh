// Sums over rows, per column, that are the same at every launch: rows in fixed blocks (one thread per
// column sums its block's rows in order), then the blocks in order. The weight gradients of the norms
// use them, as the CPU kernels sum (the NOTE in rms_norm.h on kWeightGradBlockRows).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/element.cuh"
#include "cuda/launch.h"

namespace dew::cuda {

// parts[b * C + c] = sum over rows r of block b of term(r, c).
template <class A, class Term>
__global__ void column_block_sums_kernel(int64_t rows, int64_t C, int64_t block_rows, Term term,
                                         A* __restrict__ parts) {
  const int64_t c = int64_t(blockIdx.y) * blockDim.x + threadIdx.x, b = blockIdx.x;
  if (c >= C) return;
  A s = 0;
  const int64_t end = rows < (b + 1) * block_rows ? rows : (b + 1) * block_rows;
  for (int64_t r = b * block_rows; r < end; ++r) s += term(r, c);
  parts[b * C + c] = s;
}

// out[c] = the blocks' parts summed in order, rounded once by `store`.
template <class A, class Store>
__global__ void sum_column_blocks_kernel(const A* __restrict__ parts, int64_t blocks, int64_t C,
                                         Store store) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  A s = 0;
  for (int64_t b = 0; b < blocks; ++b) s += parts[b * C + c];
  store(c, s);
}

// The usual store: the sum rounded once into T (with element.cuh's narrow).
template <class T, class A>
struct StoreNarrowed {
  T* out;
  __device__ void operator()(int64_t c, A s) const { out[c] = narrow<T>(s); }
};

// Runs both on the device's stream with a scratch table of the parts.
template <class A, class Term, class Store>
void column_sums(int device, int64_t rows, int64_t C, int64_t block_rows, Term term, Store store) {
  if (rows == 0 || C == 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = stream_of(device);
  const int64_t blocks = (rows + block_rows - 1) / block_rows;
  const DeviceBuffer<A> buffer(device, blocks * C);
  A* parts = buffer.data();
  const dim3 grid(unsigned(blocks), unsigned((C + kThreads - 1) / kThreads));
  column_block_sums_kernel<A><<<grid, kThreads, 0, stream>>>(rows, C, block_rows, term, parts);
  DEW_CUDA_CHECK_LAUNCH("column_block_sums_kernel");
  sum_column_blocks_kernel<A><<<blocks_for(C, kThreads), kThreads, 0, stream>>>(parts, blocks, C, store);
  DEW_CUDA_CHECK_LAUNCH("sum_column_blocks_kernel");
}

}  // namespace dew::cuda
