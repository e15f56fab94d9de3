// rope on CUDA: one thread per output element; each computes its own value of the rotated pair
// (xa c - xb s, or xb c + xa s) in the wide type, one rounding.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/rope/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

template <class T, class Tab>
__global__ void rope_kernel(const T* __restrict__ x, const int64_t* __restrict__ pos,
                            const Tab* __restrict__ cos, const Tab* __restrict__ sin, int64_t H, int64_t D,
                            int64_t half, bool interleaved, int64_t n, T* __restrict__ y) {
  using W = cuda::wide_t<T>;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t d = e % D, row = e / D, r = row / H;  // row = (b t) * H + h
    if (d >= 2 * half) {                                // past the rotary dims
      y[e] = x[e];
      continue;
    }
    // i: the pair's index; first: whether d is the pair's first member.
    const int64_t i = interleaved ? d / 2 : (d < half ? d : d - half);
    const bool first = interleaved ? d % 2 == 0 : d < half;
    const int64_t partner = interleaved ? (first ? d + 1 : d - 1) : (first ? d + half : d - half);
    const W self = cuda::widen(x[e]), other = cuda::widen(x[e - d + partner]);
    const W c = W(cos[pos[r] * half + i]), s = W(sin[pos[r] * half + i]);
    y[e] = cuda::narrow<T>(first ? self * c - other * s : self * c + other * s);
  }
}

constexpr int kThreads = 256;

}  // namespace

void rope(int device, DType dtype, const void* x, const int64_t* positions, const void* cos, const void* sin,
          int64_t BT, int64_t H, int64_t D, int64_t half, bool interleaved, void* y) {
  const int64_t n = BT * H * D;
  if (n == 0) return;
  cuda::use_device(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using Tab = cuda::accumulator_t<T>;
    rope_kernel<T, Tab><<<cuda::blocks_for(n, kThreads), kThreads, 0, cuda::stream_of(device)>>>(
        static_cast<const T*>(x), positions, static_cast<const Tab*>(cos), static_cast<const Tab*>(sin), H, D,
        half, interleaved, n, static_cast<T*>(y));
    DEW_CUDA_CHECK_LAUNCH("rope_kernel");
  });
}

}  // namespace dew::ops::cuda_kernels
