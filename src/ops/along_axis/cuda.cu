// softmax, log_softmax and cumsum on CUDA: one block per row, in the wide type (NOTE [cuda
// transcendental precision]). softmax and log_softmax subtract the row's maximum first (stable), as
// the CPU kernels do; cumsum scans the row chunk by chunk, carrying each chunk's total.
#include "cuda/block_reduce.cuh"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/along_axis/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void softmax_rows_kernel(const T* __restrict__ x, int64_t n, bool log_form, T* __restrict__ y) {
  using W = cuda::wide_t<T>;
  __shared__ W scratch[32];
  const T* row = x + int64_t(blockIdx.x) * n;
  T* out = y + int64_t(blockIdx.x) * n;
  const auto [m, s] = cuda::block_max_and_exp_sum<W>(row, n, scratch);
  if (log_form) {
    const W log_s = log(s);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      out[i] = cuda::narrow<T>((W(cuda::widen(row[i])) - m) - log_s);
  } else {
    const W inv = W(1) / s;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      out[i] = cuda::narrow<T>(exp(W(cuda::widen(row[i])) - m) * inv);
  }
}

template <class T>
__global__ void cumsum_rows_kernel(const T* __restrict__ x, int64_t n, T* __restrict__ y) {
  using W = cuda::wide_t<T>;
  __shared__ W scan[kThreads];
  const T* row = x + int64_t(blockIdx.x) * n;
  T* out = y + int64_t(blockIdx.x) * n;
  W carry = 0;
  for (int64_t base = 0; base < n; base += blockDim.x) {
    const int64_t i = base + threadIdx.x;
    scan[threadIdx.x] = i < n ? W(cuda::widen(row[i])) : W(0);
    __syncthreads();
    for (int offset = 1; offset < int(blockDim.x); offset *= 2) {  // Hillis-Steele inclusive scan
      const W add = int(threadIdx.x) >= offset ? scan[threadIdx.x - offset] : W(0);
      __syncthreads();
      scan[threadIdx.x] += add;
      __syncthreads();
    }
    if (i < n) out[i] = cuda::narrow<T>(carry + scan[threadIdx.x]);
    carry += scan[blockDim.x - 1];
    __syncthreads();  // the next chunk overwrites scan
  }
}

}  // namespace

void along_rows(int device, AlongAxisFn fn, DType dtype, const void* x, int64_t rows, int64_t n, void* y) {
  if (rows == 0 || n == 0) return;
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (int64_t r0 = 0; r0 < rows; r0 += INT32_MAX) {
      const unsigned grid = unsigned(std::min<int64_t>(rows - r0, INT32_MAX));
      const T* xr = static_cast<const T*>(x) + r0 * n;
      T* yr = static_cast<T*>(y) + r0 * n;
      if (fn == AlongAxisFn::cumsum)
        cumsum_rows_kernel<T><<<grid, kThreads, 0, stream>>>(xr, n, yr);
      else
        softmax_rows_kernel<T><<<grid, kThreads, 0, stream>>>(xr, n, fn == AlongAxisFn::log_softmax, yr);
      DEW_CUDA_CHECK_LAUNCH("along_rows kernel");
    }
  });
}

}  // namespace dew::ops::cuda_kernels
