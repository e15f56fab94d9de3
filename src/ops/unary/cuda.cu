// Unary ops on CUDA: one thread per element (grid-stride), or per 16-byte pack when x is contiguous
// and aligned (cuda/packed.cuh); the scalar mathematics of scalar.h in the wide type (NOTE [cuda
// transcendental precision]), one rounding to the output dtype.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "cuda/packed.cuh"
#include "ops/unary/cuda.h"
#include "ops/unary/scalar.h"

namespace dew::ops::cuda_kernels {
namespace {

template <UnaryFn F, class T>
struct ApplyUnary {
  __device__ T operator()(T x) const { return cuda::narrow<T>(unary_apply<F>(cuda::widen(x))); }
};

template <UnaryFn F, class T>
__global__ void unary_kernel(cuda::View x, T* __restrict__ y, int64_t n) {
  const T* src = static_cast<const T*>(x.data);
  for (int64_t i = cuda::thread_index(); i < n; i += cuda::thread_stride())
    y[i] = ApplyUnary<F, T>{}(src[cuda::element_offset(x, i)]);
}

constexpr int kThreads = 256;

}  // namespace

void unary(int device, UnaryFn fn, DType dtype, const cuda::View& x, void* y) {
  if (x.numel == 0) return;
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  with_unary_fn(fn, [&](auto f) {
    cuda::visit_floating(dtype, [&](auto zero) {
      using T = decltype(zero);
      constexpr UnaryFn F = decltype(f)::value;
      if (x.contiguous && cuda::aligned16(x.data) && cuda::aligned16(y)) {
        cuda::map1_packed<<<cuda::packed_blocks(x.numel, kThreads, cuda::kPack<T>), kThreads, 0, stream>>>(
            ApplyUnary<F, T>{}, static_cast<const T*>(x.data), static_cast<T*>(y), x.numel);
        DEW_CUDA_CHECK_LAUNCH("unary map1_packed");
      } else {
        unary_kernel<F, T>
            <<<cuda::blocks_for(x.numel, kThreads), kThreads, 0, stream>>>(x, static_cast<T*>(y), x.numel);
        DEW_CUDA_CHECK_LAUNCH("unary_kernel");
      }
    });
  });
}

}  // namespace dew::ops::cuda_kernels
