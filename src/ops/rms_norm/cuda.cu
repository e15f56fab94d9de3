// rms_norm and its backward on CUDA: one block per row for y and dx, in the wide type (NOTE [cuda
// transcendental precision]); dweight by fixed row blocks (one thread per channel) and then their
// ordered sum, as the CPU kernels do, so it is the same at every launch.
#include "cuda/block_reduce.cuh"
#include "cuda/column_sums.cuh"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/rms_norm/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kThreads = 256;

template <class T>
__device__ cuda::wide_t<T> weight_at(const T* w, int64_t i) {
  return w ? cuda::wide_t<T>(cuda::widen(w[i])) : cuda::wide_t<T>(1);
}

template <class T>
__global__ void forward_kernel(const T* __restrict__ x, const T* __restrict__ w, double eps, int64_t C,
                               T* __restrict__ y, cuda::accumulator_t<T>* __restrict__ rstd) {
  using W = cuda::wide_t<T>;
  __shared__ W scratch[32];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * C;
  W ss = 0;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const W v = cuda::widen(xr[i]);
    ss += v * v;
  }
  ss = cuda::block_sum(ss, scratch);
  const W inv = W(1) / sqrt(ss / W(C) + W(eps));
  if (threadIdx.x == 0) rstd[r] = cuda::accumulator_t<T>(inv);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x)
    y[r * C + i] = cuda::narrow<T>(W(cuda::widen(xr[i])) * inv * weight_at(w, i));
}

// dx = rstd * (dy*w - x * rstd^2 * mean(dy*w*x))
template <class T>
__global__ void dx_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ w,
                          const cuda::accumulator_t<T>* __restrict__ rstd, int64_t C, T* __restrict__ dx) {
  using W = cuda::wide_t<T>;
  __shared__ W scratch[32];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * C;
  const T* dyr = dy + r * C;
  const W inv = W(rstd[r]);
  W s = 0;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x)
    s += W(cuda::widen(dyr[i])) * W(cuda::widen(xr[i])) * weight_at(w, i);
  s = cuda::block_sum(s, scratch);
  const W k = inv * inv * s / W(C);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x)
    dx[r * C + i] =
        cuda::narrow<T>(inv * (W(cuda::widen(dyr[i])) * weight_at(w, i) - W(cuda::widen(xr[i])) * k));
}

// dweight's term: dy * x * rstd of row r, column c.
template <class T>
struct WeightGradTerm {
  const T* dy;
  const T* x;
  const cuda::accumulator_t<T>* rstd;
  int64_t C;
  __device__ cuda::wide_t<T> operator()(int64_t r, int64_t c) const {
    using W = cuda::wide_t<T>;
    return W(cuda::widen(dy[r * C + c])) * W(cuda::widen(x[r * C + c])) * W(rstd[r]);
  }
};

}  // namespace

void rms_norm_forward(int device, DType dtype, const void* x, const void* weight, double eps, int64_t rows,
                      int64_t C, void* y, void* rstd) {
  if (rows == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<unsigned(rows), kThreads, 0, cuda::stream_of(device)>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), eps, C, static_cast<T*>(y),
        static_cast<cuda::accumulator_t<T>*>(rstd));
    DEW_CUDA_CHECK_LAUNCH("rms_norm forward_kernel");
  });
}

void rms_norm_backward(int device, DType dtype, const void* dy, const void* x, const void* weight,
                       const void* rstd, int64_t rows, int64_t C, int64_t block_rows, void* dx,
                       void* dweight) {
  if (rows == 0) return;
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using W = cuda::wide_t<T>;
    const T* w = static_cast<const T*>(weight);
    const cuda::accumulator_t<T>* rs = static_cast<const cuda::accumulator_t<T>*>(rstd);
    dx_kernel<T><<<unsigned(rows), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<const T*>(x),
                                                          w, rs, C, static_cast<T*>(dx));
    DEW_CUDA_CHECK_LAUNCH("rms_norm dx_kernel");
    if (!weight) return;
    cuda::column_sums<W>(device, rows, C, block_rows,
                         WeightGradTerm<T>{static_cast<const T*>(dy), static_cast<const T*>(x), rs, C},
                         cuda::StoreNarrowed<T, W>{static_cast<T*>(dweight)});
  });
}

}  // namespace dew::ops::cuda_kernels
