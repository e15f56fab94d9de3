// cross_entropy on CUDA, in three launches: the sum of the counted rows' weights (one block, a fixed
// order); one block per row for lse, the row's loss and its gradient, all in f64 (a row sum's rounding
// would scale the whole gradient row by one shared error: NOTE [one pass over the logits] in
// kernels.h); and the loss as the ordered sum of the rows' losses (one block).
#include "cuda/block_reduce.cuh"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/cross_entropy/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kThreads = 256;

template <class R>
__global__ void weight_sum_kernel(const int64_t* __restrict__ t, const R* __restrict__ w,
                                  int64_t ignore_index, int64_t N, double* __restrict__ total) {
  __shared__ double scratch[32];
  double s = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x)
    if (t[i] != ignore_index) s += w ? double(w[i]) : 1.0;
  s = cuda::block_sum(s, scratch);
  if (threadIdx.x == 0) *total = s;
}

template <class T>
__global__ void rows_kernel(const T* __restrict__ x, const int64_t* __restrict__ t,
                            const cuda::accumulator_t<T>* __restrict__ w, int64_t ignore_index, double z,
                            int64_t V, const double* __restrict__ total, T* __restrict__ dx,
                            cuda::accumulator_t<T>* __restrict__ lse_out, double* __restrict__ row_loss) {
  __shared__ double scratch[32];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * V;
  T* dr = dx + r * V;
  const auto [m, s] = cuda::block_max_and_exp_sum<double>(xr, V, scratch);
  const double lse = m + log(s);
  const int64_t target = t[r];
  const bool counted = target != ignore_index;
  const double inv_w = *total > 0 ? 1.0 / *total : 0.0;
  const double scale = counted ? (w ? double(w[r]) : 1.0) * inv_w : 0.0;
  if (threadIdx.x == 0) {
    lse_out[r] = cuda::accumulator_t<T>(lse);
    row_loss[r] = counted ? scale * (lse - double(cuda::widen(xr[target])) + z * lse * lse) : 0.0;
  }
  // d logits = scale (1 + 2 z lse) softmax(x) - scale [i = target]
  const double row_scale = scale * (1.0 + 2.0 * z * lse) / s;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
    double d = row_scale * exp(double(cuda::widen(xr[i])) - m);
    if (counted && i == target) d -= scale;
    dr[i] = cuda::from_double<T>(d);
  }
}

template <class R>
__global__ void loss_sum_kernel(const double* __restrict__ row_loss, int64_t N, R* __restrict__ loss) {
  __shared__ double scratch[32];
  double s = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) s += row_loss[i];
  s = cuda::block_sum(s, scratch);
  if (threadIdx.x == 0) *loss = R(s);
}

}  // namespace

void cross_entropy(int device, DType dtype, const void* logits, const int64_t* targets, const void* weights,
                   int64_t ignore_index, double z_loss, int64_t N, int64_t V, void* loss, void* d_logits,
                   void* lse) {
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using R = cuda::accumulator_t<T>;
    const cuda::DeviceBuffer<double> scratch(device, N + 1);  // the weights' sum, then each row's loss
    double* total = scratch.data();
    double* row_loss = scratch.data() + 1;
    weight_sum_kernel<R>
        <<<1, kThreads, 0, stream>>>(targets, static_cast<const R*>(weights), ignore_index, N, total);
    DEW_CUDA_CHECK_LAUNCH("cross_entropy weight_sum_kernel");
    if (N > 0) {
      rows_kernel<T><<<unsigned(N), kThreads, 0, stream>>>(
          static_cast<const T*>(logits), targets, static_cast<const R*>(weights), ignore_index, z_loss, V,
          total, static_cast<T*>(d_logits), static_cast<R*>(lse), row_loss);
      DEW_CUDA_CHECK_LAUNCH("cross_entropy rows_kernel");
    }
    loss_sum_kernel<R><<<1, kThreads, 0, stream>>>(row_loss, N, static_cast<R*>(loss));
    DEW_CUDA_CHECK_LAUNCH("cross_entropy loss_sum_kernel");
  });
}

}  // namespace dew::ops::cuda_kernels
