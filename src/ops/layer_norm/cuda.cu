// layer_norm and its backward on CUDA: one block per row for y and dx, two passes (the mean, then
// the biased variance) in the wide type; dweight and dbias by fixed row blocks summed in order
// (cuda/column_sums.cuh), as the CPU kernels do.
#include "cuda/block_reduce.cuh"
#include "cuda/column_sums.cuh"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/layer_norm/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kThreads = 256;

template <class T>
__device__ cuda::wide_t<T> channel(const T* p, int64_t i, cuda::wide_t<T> otherwise) {
  return p ? cuda::wide_t<T>(cuda::widen(p[i])) : otherwise;
}

template <class T>
__global__ void forward_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                               double eps, int64_t C, T* __restrict__ y,
                               cuda::accumulator_t<T>* __restrict__ mean,
                               cuda::accumulator_t<T>* __restrict__ rstd) {
  using W = cuda::wide_t<T>;
  __shared__ W scratch[32];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * C;
  W s = 0;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) s += W(cuda::widen(xr[i]));
  const W mu = cuda::block_sum(s, scratch) / W(C);
  W v = 0;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const W d = W(cuda::widen(xr[i])) - mu;
    v += d * d;
  }
  const W rs = W(1) / sqrt(cuda::block_sum(v, scratch) / W(C) + W(eps));
  if (threadIdx.x == 0) mean[r] = cuda::accumulator_t<T>(mu), rstd[r] = cuda::accumulator_t<T>(rs);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x)
    y[r * C + i] =
        cuda::narrow<T>((W(cuda::widen(xr[i])) - mu) * rs * channel(w, i, W(1)) + channel(bias, i, W(0)));
}

// dx = rstd * (g - mean(g) - xhat * mean(g xhat)), g = dy * w, xhat = (x - mean) * rstd.
template <class T>
__global__ void dx_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ w,
                          const cuda::accumulator_t<T>* __restrict__ mean,
                          const cuda::accumulator_t<T>* __restrict__ rstd, int64_t C, T* __restrict__ dx) {
  using W = cuda::wide_t<T>;
  __shared__ W scratch[32];
  const int64_t r = blockIdx.x;
  const W mu = W(mean[r]), rs = W(rstd[r]);
  W sg = 0, sgx = 0;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const W g = W(cuda::widen(dy[r * C + i])) * channel(w, i, W(1));
    sg += g;
    sgx += g * (W(cuda::widen(x[r * C + i])) - mu) * rs;
  }
  const W mean_g = cuda::block_sum(sg, scratch) / W(C);
  const W mean_gx = cuda::block_sum(sgx, scratch) / W(C);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    const W g = W(cuda::widen(dy[r * C + i])) * channel(w, i, W(1));
    const W xhat = (W(cuda::widen(x[r * C + i])) - mu) * rs;
    dx[r * C + i] = cuda::narrow<T>(rs * (g - mean_g - xhat * mean_gx));
  }
}

// dweight's term dy * xhat, and dbias's dy.
template <class T>
struct WeightGradTerm {
  const T* dy;
  const T* x;
  const cuda::accumulator_t<T>* mean;
  const cuda::accumulator_t<T>* rstd;
  int64_t C;
  __device__ cuda::wide_t<T> operator()(int64_t r, int64_t c) const {
    using W = cuda::wide_t<T>;
    return W(cuda::widen(dy[r * C + c])) * ((W(cuda::widen(x[r * C + c])) - W(mean[r])) * W(rstd[r]));
  }
};

template <class T>
struct BiasGradTerm {
  const T* dy;
  int64_t C;
  __device__ cuda::wide_t<T> operator()(int64_t r, int64_t c) const { return cuda::widen(dy[r * C + c]); }
};

}  // namespace

void layer_norm_forward(int device, DType dtype, const void* x, const void* weight, const void* bias,
                        double eps, int64_t rows, int64_t C, void* y, void* mean, void* rstd) {
  if (rows == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    forward_kernel<T><<<unsigned(rows), kThreads, 0, cuda::stream_of(device)>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), eps, C,
        static_cast<T*>(y), static_cast<cuda::accumulator_t<T>*>(mean),
        static_cast<cuda::accumulator_t<T>*>(rstd));
    DEW_CUDA_CHECK_LAUNCH("layer_norm forward_kernel");
  });
}

void layer_norm_backward(int device, DType dtype, const void* dy, const void* x, const void* weight,
                         const void* mean, const void* rstd, int64_t rows, int64_t C, int64_t block_rows,
                         void* dx, void* dweight, void* dbias) {
  if (rows == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using W = cuda::wide_t<T>;
    const T* dyp = static_cast<const T*>(dy);
    const T* xp = static_cast<const T*>(x);
    const cuda::accumulator_t<T>* mp = static_cast<const cuda::accumulator_t<T>*>(mean);
    const cuda::accumulator_t<T>* rp = static_cast<const cuda::accumulator_t<T>*>(rstd);
    dx_kernel<T><<<unsigned(rows), kThreads, 0, cuda::stream_of(device)>>>(
        dyp, xp, static_cast<const T*>(weight), mp, rp, C, static_cast<T*>(dx));
    DEW_CUDA_CHECK_LAUNCH("layer_norm dx_kernel");
    if (!weight) return;
    cuda::column_sums<W>(device, rows, C, block_rows, WeightGradTerm<T>{dyp, xp, mp, rp, C},
                         cuda::StoreNarrowed<T, W>{static_cast<T*>(dweight)});
    cuda::column_sums<W>(device, rows, C, block_rows, BiasGradTerm<T>{dyp, C},
                         cuda::StoreNarrowed<T, W>{static_cast<T*>(dbias)});
  });
}

}  // namespace dew::ops::cuda_kernels
