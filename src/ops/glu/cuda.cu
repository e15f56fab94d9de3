// The gated linear units on CUDA: one thread per element (grid-stride), activation.h's functions and
// derivatives in the wide type (NOTE [cuda transcendental precision]), one rounding per output.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/activation.h"
#include "ops/glu/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

template <class T>
__global__ void glu_kernel(Activation act, const T* __restrict__ gate, const T* __restrict__ up,
                           const T* __restrict__ dy, int64_t n, T* __restrict__ out0, T* __restrict__ out1) {
  using W = cuda::wide_t<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const W g = cuda::widen(gate[i]), u = cuda::widen(up[i]);
    if (!dy) {
      out0[i] = cuda::narrow<T>(apply_activation(act, g) * u);
    } else {
      const W d = cuda::widen(dy[i]);
      out0[i] = cuda::narrow<T>(d * u * activation_derivative(act, g));
      out1[i] = cuda::narrow<T>(d * apply_activation(act, g));
    }
  }
}

constexpr int kThreads = 256;

}  // namespace

void glu(int device, Activation act, DType dtype, const void* gate, const void* up, const void* dy, int64_t n,
         void* out0, void* out1) {
  if (n == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    glu_kernel<T><<<cuda::blocks_for(n, kThreads), kThreads, 0, cuda::stream_of(device)>>>(
        act, static_cast<const T*>(gate), static_cast<const T*>(up), static_cast<const T*>(dy), n,
        static_cast<T*>(out0), static_cast<T*>(out1));
    DEW_CUDA_CHECK_LAUNCH("glu_kernel");
  });
}

}  // namespace dew::ops::cuda_kernels
