// Unary ops on CUDA: one thread per element (grid-stride), the scalar mathematics of scalar.h in the
// wide type (NOTE [cuda transcendental precision]), one rounding to the output dtype.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/unary/cuda.h"
#include "ops/unary/scalar.h"

namespace dew::ops::cuda_kernels {
namespace {

template <UnaryFn F, class T>
__global__ void unary_kernel(cuda::View x, T* __restrict__ y, int64_t n) {
  const T* src = static_cast<const T*>(x.data);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const auto v = cuda::widen(src[cuda::element_offset(x, i)]);
    y[i] = cuda::narrow<T>(unary_apply<F>(v));
  }
}

constexpr int kThreads = 256;

}  // namespace

void unary(int device, UnaryFn fn, DType dtype, const cuda::View& x, void* y) {
  if (x.numel == 0) return;
  cuda::use_device(device);
  with_unary_fn(fn, [&](auto f) {
    cuda::visit_floating(dtype, [&](auto zero) {
      using T = decltype(zero);
      unary_kernel<decltype(f)::value, T>
          <<<cuda::blocks_for(x.numel, kThreads), kThreads, 0, cuda::stream_of(device)>>>(
              x, static_cast<T*>(y), x.numel);
      DEW_CUDA_CHECK_LAUNCH("unary_kernel");
    });
  });
}

}  // namespace dew::ops::cuda_kernels
