// Binary ops on CUDA: one thread per output element (grid-stride), both inputs read through their
// broadcast strides, scalar.h's mathematics in the wide type (NOTE [cuda transcendental precision]).
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/binary/cuda.h"
#include "ops/binary/scalar.h"

namespace dew::ops::cuda_kernels {
namespace {

template <BinaryFn F, class T>
__global__ void binary_kernel(cuda::View a, cuda::View b, void* __restrict__ y, int64_t n) {
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const auto x = cuda::widen(pa[cuda::element_offset(a, i)]);
    const auto z = cuda::widen(pb[cuda::element_offset(b, i)]);
    const auto v = binary_apply<F>(x, z);
    if constexpr (F >= BinaryFn::eq)  // comparisons: bool out
      static_cast<bool*>(y)[i] = v != 0;
    else
      static_cast<T*>(y)[i] = cuda::narrow<T>(v);
  }
}

constexpr int kThreads = 256;

}  // namespace

void binary(int device, BinaryFn fn, DType dtype, const cuda::View& a, const cuda::View& b, void* y) {
  const int64_t n = a.numel;
  if (n == 0) return;
  cuda::use_device(device);
  with_binary_fn(fn, [&](auto f) {
    cuda::visit_floating(dtype, [&](auto zero) {
      using T = decltype(zero);
      binary_kernel<decltype(f)::value, T>
          <<<cuda::blocks_for(n, kThreads), kThreads, 0, cuda::stream_of(device)>>>(a, b, y, n);
      DEW_CUDA_CHECK_LAUNCH("binary_kernel");
    });
  });
}

}  // namespace dew::ops::cuda_kernels
