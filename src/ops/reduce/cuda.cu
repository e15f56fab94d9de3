// Reductions on CUDA: one block per row. Each thread folds a strided share of the row in the wide
// type (f64 for f32, NOTE [cuda transcendental precision]), then the block combines the partials.
// argmax keeps (value, index) pairs: NaN wins, ties go to the lower index, as on the CPU.
#include "cuda/block_reduce.cuh"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/reduce/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void sum_rows_kernel(const T* __restrict__ x, int64_t n, bool mean, T* __restrict__ y) {
  using W = cuda::wide_t<T>;
  __shared__ W scratch[32];
  const T* row = x + int64_t(blockIdx.x) * n;
  W s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += cuda::widen(row[i]);
  s = cuda::block_sum(s, scratch);
  if (threadIdx.x == 0) y[blockIdx.x] = cuda::narrow<T>(mean ? s / W(n) : s);
}

template <class T>
__global__ void logsumexp_rows_kernel(const T* __restrict__ x, int64_t n, T* __restrict__ y) {
  using W = cuda::wide_t<T>;
  __shared__ W scratch[32];
  const T* row = x + int64_t(blockIdx.x) * n;
  const auto [m, s] = cuda::block_max_and_exp_sum<W>(row, n, scratch);
  // All -inf, or +inf or NaN present: the maximum is the answer.
  if (threadIdx.x == 0) y[blockIdx.x] = cuda::narrow<T>(isinf(m) || m != m ? m : m + log(s));
}

// Is (v, i) a better pick than (best, at) for max (or min)? NaN first, then value, then lower index.
template <class W>
__device__ bool better(W v, int64_t i, W best, int64_t at, bool minimum) {
  const bool v_nan = v != v, best_nan = best != best;
  if (v_nan || best_nan) return v_nan && (!best_nan || i < at);
  if (v == best) return i < at;
  return minimum ? v < best : v > best;
}

template <class T, class Out>
__global__ void extreme_rows_kernel(const T* __restrict__ x, int64_t n, bool minimum, bool index,
                                    Out* __restrict__ y) {
  using W = cuda::wide_t<T>;
  __shared__ W values[kThreads];
  __shared__ int64_t indices[kThreads];
  const T* row = x + int64_t(blockIdx.x) * n;
  W best = 0;
  int64_t at = -1;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const W v = cuda::widen(row[i]);
    if (at < 0 || better(v, i, best, at, minimum)) best = v, at = i;
  }
  values[threadIdx.x] = best;
  indices[threadIdx.x] = at;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) {
      const int other = threadIdx.x + half;
      const int64_t oi = indices[other];
      if (oi >= 0 && (indices[threadIdx.x] < 0 ||
                      better(values[other], oi, values[threadIdx.x], indices[threadIdx.x], minimum))) {
        values[threadIdx.x] = values[other];
        indices[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    if constexpr (std::is_same_v<Out, int64_t>)
      y[blockIdx.x] = indices[0];
    else
      y[blockIdx.x] = cuda::narrow<T>(values[0]);
  }
}

}  // namespace

void reduce_rows(int device, ReduceFn fn, DType dtype, const void* x, int64_t rows, int64_t n, void* y) {
  if (rows == 0) return;
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* in = static_cast<const T*>(x);
    for (int64_t r0 = 0; r0 < rows; r0 += INT32_MAX) {  // gridDim.x's limit
      const unsigned grid = unsigned(std::min<int64_t>(rows - r0, INT32_MAX));
      const T* xr = in + r0 * n;
      switch (fn) {
        case ReduceFn::sum:
        case ReduceFn::mean:
          sum_rows_kernel<T>
              <<<grid, kThreads, 0, stream>>>(xr, n, fn == ReduceFn::mean, static_cast<T*>(y) + r0);
          break;
        case ReduceFn::logsumexp:
          logsumexp_rows_kernel<T><<<grid, kThreads, 0, stream>>>(xr, n, static_cast<T*>(y) + r0);
          break;
        case ReduceFn::argmax:
          extreme_rows_kernel<T, int64_t>
              <<<grid, kThreads, 0, stream>>>(xr, n, false, true, static_cast<int64_t*>(y) + r0);
          break;
        default:
          extreme_rows_kernel<T, T>
              <<<grid, kThreads, 0, stream>>>(xr, n, fn == ReduceFn::min, false, static_cast<T*>(y) + r0);
      }
      DEW_CUDA_CHECK_LAUNCH("reduce_rows kernel");
    }
  });
}

}  // namespace dew::ops::cuda_kernels
