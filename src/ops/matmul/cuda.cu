// matmul's epilogue on CUDA, for what cuBLASLt's own epilogues do not cover (GELU, SiLU, an activation
// followed by a residual, f64): epilogue.h's formula over the f32 (f64) product, one rounding.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/matmul/cuda.h"
#include "ops/matmul/epilogue.h"

namespace dew::ops::cuda_kernels {
namespace {

template <class T, class Acc>
__global__ void epilogue_kernel(const Acc* __restrict__ acc, const T* __restrict__ bias,
                                const T* __restrict__ residual, Activation act, double scale,
                                T* __restrict__ y, int64_t n, int64_t N) {
  using W = cuda::wide_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const W b = bias ? W(cuda::widen(bias[i % N])) : W(0);
    const W r = residual ? W(cuda::widen(residual[i])) : W(0);
    y[i] = cuda::narrow<T>(ops::matmul_epilogue<W>(act, W(scale), W(acc[i]), b, r));
  }
}

constexpr int kThreads = 256;

}  // namespace

void matmul_epilogue(int device, DType dtype, const void* acc, const void* bias, const void* residual,
                     Activation act, double scale, void* y, int64_t rows, int64_t N) {
  const int64_t n = rows * N;
  if (n == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using Acc = cuda::accumulator_t<T>;
    epilogue_kernel<T, Acc><<<cuda::blocks_for(n, kThreads), kThreads, 0, cuda::stream_of(device)>>>(
        static_cast<const Acc*>(acc), static_cast<const T*>(bias), static_cast<const T*>(residual), act,
        scale, static_cast<T*>(y), n, N);
    DEW_CUDA_CHECK_LAUNCH("matmul epilogue_kernel");
  });
}

}  // namespace dew::ops::cuda_kernels
