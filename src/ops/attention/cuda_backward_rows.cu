// attention backward's per-row statistics, shared by the SIMT and tensor-core kernels: Dt = dout . out
// for each query row (the softmax's correction term) and the row's share of dsinks, in the wide type;
// then dsinks as the sum of the shares in (b, t) order. One writer per element: no atomics.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/attention/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kWarpsPerBlock = 4;

// One warp per query row (b, h, t), lanes striding over D, then a butterfly over the warp.
template <class T>
__global__ void backward_rows_kernel(AttentionCall c, const T* __restrict__ dout, const T* __restrict__ out,
                                     const cuda::accumulator_t<T>* __restrict__ lse,
                                     cuda::wide_t<T>* __restrict__ Dt_rows,
                                     cuda::wide_t<T>* __restrict__ dsink_rows) {
  using W = cuda::wide_t<T>;
  const int64_t w = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (w >= c.B * c.H * c.T) return;
  const int64_t b = w / (c.H * c.T), h = (w / c.T) % c.H, t = w % c.T;
  const int64_t row = ((b * c.T + t) * c.H + h) * c.D, stat = (b * c.H + h) * c.T + t;
  W Dt = 0;
  for (int64_t d = threadIdx.x % 32; d < c.D; d += 32)
    Dt += W(cuda::widen(dout[row + d])) * W(cuda::widen(out[row + d]));
  for (int offset = 16; offset > 0; offset /= 2) Dt += __shfl_xor_sync(0xffffffffu, Dt, offset);
  if (threadIdx.x % 32 != 0) return;
  Dt_rows[stat] = Dt;
  if (c.sinks) {
    const W lse_t = W(lse[stat]);
    const W sink = W(static_cast<const cuda::accumulator_t<T>*>(c.sinks)[h]);
    dsink_rows[stat] = lse_t != W(-INFINITY) ? -exp(sink - lse_t) * Dt : W(0);
  }
}

// dsinks[h] = the sum over b and t of the rows' shares, in that order (one thread per head).
template <class T>
__global__ void dsinks_kernel(AttentionCall c, const cuda::wide_t<T>* __restrict__ dsink_rows,
                              cuda::accumulator_t<T>* __restrict__ dsinks) {
  const int64_t h = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (h >= c.H) return;
  cuda::wide_t<T> s = 0;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t) s += dsink_rows[(b * c.H + h) * c.T + t];
  dsinks[h] = cuda::accumulator_t<T>(s);
}

}  // namespace

void attention_backward_rows(int device, DType dtype, const AttentionCall& c, const void* dout,
                             const void* out, const void* lse, void* Dt_rows, void* dsink_rows) {
  const int64_t rows = c.B * c.H * c.T;
  if (rows == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using W = cuda::wide_t<T>;
    backward_rows_kernel<T>
        <<<unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock), 32 * kWarpsPerBlock, 0,
           cuda::stream_of(device)>>>(c, static_cast<const T*>(dout), static_cast<const T*>(out),
                                      static_cast<const cuda::accumulator_t<T>*>(lse),
                                      static_cast<W*>(Dt_rows), static_cast<W*>(dsink_rows));
    DEW_CUDA_CHECK_LAUNCH("attention backward_rows_kernel");
  });
}

void attention_dsinks(int device, DType dtype, const AttentionCall& c, const void* dsink_rows, void* dsinks) {
  if (!c.sinks || c.H == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    dsinks_kernel<T><<<cuda::blocks_for(c.H, 128), 128, 0, cuda::stream_of(device)>>>(
        c, static_cast<const cuda::wide_t<T>*>(dsink_rows), static_cast<cuda::accumulator_t<T>*>(dsinks));
    DEW_CUDA_CHECK_LAUNCH("attention dsinks_kernel");
  });
}

}  // namespace dew::ops::cuda_kernels
