// Binary ops on CUDA: one thread per output element (grid-stride), both inputs read through their
// broadcast strides, or one per 16-byte pack when both are contiguous, aligned and of the output's
// shape (cuda/packed.cuh); scalar.h's mathematics in the wide type (NOTE [cuda transcendental
// precision]).
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "cuda/packed.cuh"
#include "ops/binary/cuda.h"
#include "ops/binary/scalar.h"

namespace dew::ops::cuda_kernels {
namespace {

// One arithmetic element (comparisons have their own bool output in binary_kernel).
template <BinaryFn F, class T>
struct ApplyBinary {
  __device__ T operator()(T x, T z) const {
    return cuda::narrow<T>(binary_apply<F>(cuda::widen(x), cuda::widen(z)));
  }
};

template <BinaryFn F, class T>
__global__ void binary_kernel(cuda::View a, cuda::View b, void* __restrict__ y, int64_t n) {
  const T* pa = static_cast<const T*>(a.data);
  const T* pb = static_cast<const T*>(b.data);
  for (int64_t i = cuda::thread_index(); i < n; i += cuda::thread_stride()) {
    const T x = pa[cuda::element_offset(a, i)], z = pb[cuda::element_offset(b, i)];
    if constexpr (F >= BinaryFn::eq)  // comparisons: bool out
      static_cast<bool*>(y)[i] = binary_apply<F>(cuda::widen(x), cuda::widen(z)) != 0;
    else
      static_cast<T*>(y)[i] = ApplyBinary<F, T>{}(x, z);
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
      constexpr BinaryFn F = decltype(f)::value;
      const cudaStream_t stream = cuda::stream_of(device);
      if constexpr (F < BinaryFn::eq) {
        if (a.contiguous && b.contiguous && cuda::aligned16(a.data) && cuda::aligned16(b.data) &&
            cuda::aligned16(y)) {
          cuda::map2_packed<<<cuda::packed_blocks(n, kThreads, cuda::kPack<T>), kThreads, 0, stream>>>(
              ApplyBinary<F, T>{}, static_cast<const T*>(a.data), static_cast<const T*>(b.data),
              static_cast<T*>(y), n);
          DEW_CUDA_CHECK_LAUNCH("binary map2_packed");
          return;
        }
      }
      binary_kernel<F, T><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(a, b, y, n);
      DEW_CUDA_CHECK_LAUNCH("binary_kernel");
    });
  });
}

}  // namespace dew::ops::cuda_kernels
