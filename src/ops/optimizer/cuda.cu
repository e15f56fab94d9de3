// The optimizer ops on CUDA: one thread per element for the updates, each product and sum rounded on
// its own (__fmul_rn and kin are never contracted into an FMA), so an update gives the CPU's bits; one
// thread block per kNormBlock elements for squared_norm, then one thread over the blocks in order.
#include "cuda/block_reduce.cuh"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/optimizer/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

__device__ __forceinline__ float mul(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double mul(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ __forceinline__ float add(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double add(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ __forceinline__ float sub(float a, float b) {
  return __fsub_rn(a, b);
}
__device__ __forceinline__ double sub(double a, double b) {
  return __dsub_rn(a, b);
}

#define DEW_FOR_EACH_ELEMENT(i, n)                                        \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; \
       i += int64_t(gridDim.x) * blockDim.x)

template <class T>
__global__ void adamw_kernel(T* p, const T* g, T* m, T* v, int64_t n, T decay, T w1, T beta2, T w2, T root,
                             T eps, T step_size) {
  DEW_FOR_EACH_ELEMENT(i, n) {
    const T mean = add(m[i], mul(w1, sub(g[i], m[i])));
    const T second = add(mul(v[i], beta2), mul(mul(w2, g[i]), g[i]));
    const T denom = add(sqrt(second) / root, eps);
    m[i] = mean;
    v[i] = second;
    p[i] = add(mul(p[i], decay), mul(step_size, mean / denom));
  }
}

template <class T>
__global__ void sgd_kernel(T* p, const T* g, T* buffer, int64_t n, T weight_decay, T momentum, T keep, T rate,
                           bool decays, bool first, bool nesterov) {
  DEW_FOR_EACH_ELEMENT(i, n) {
    T d = decays ? add(g[i], mul(weight_decay, p[i])) : g[i];
    if (buffer) {
      buffer[i] = first ? d : add(mul(buffer[i], momentum), mul(keep, d));
      d = nesterov ? add(d, mul(momentum, buffer[i])) : buffer[i];
    }
    p[i] = add(p[i], mul(rate, d));
  }
}

template <class T>
__global__ void lion_kernel(T* p, const T* g, T* m, int64_t n, T decay, T rate, T beta1, T w1, T beta2,
                            T w2) {
  DEW_FOR_EACH_ELEMENT(i, n) {
    const T interpolated = add(mul(beta1, m[i]), mul(w1, g[i]));
    const T sign = T((interpolated > T(0)) - (interpolated < T(0)));
    p[i] = sub(mul(p[i], decay), mul(rate, sign));
    m[i] = add(mul(beta2, m[i]), mul(w2, g[i]));
  }
}

constexpr int kThreads = 256;

template <class T>
__global__ void block_squares_kernel(const T* x, int64_t n, double* partial) {
  __shared__ double scratch[32];
  const int64_t begin = int64_t(blockIdx.x) * kNormBlock,
                end = begin + kNormBlock < n ? begin + kNormBlock : n;
  double s = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double e = double(cuda::widen(x[i]));
    s = __dadd_rn(s, __dmul_rn(e, e));
  }
  s = cuda::block_sum(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sum_in_order_kernel(const double* partial, int64_t blocks, double* out) {
  double total = 0;
  for (int64_t b = 0; b < blocks; ++b) total += partial[b];
  *out = total;
}

// Launches one update over n elements of f32 or f64 (the dtypes the updates are registered for):
// launch(T{}, grid, stream) starts the kernel.
template <class Launch>
void launch_update(int device, DType dtype, int64_t n, const char* kernel, Launch&& launch) {
  if (n == 0) return;
  cuda::use_device(device);
  if (dtype == DType::f64)
    launch(double{}, cuda::blocks_for(n, kThreads), cuda::stream_of(device));
  else
    launch(float{}, cuda::blocks_for(n, kThreads), cuda::stream_of(device));
  DEW_CUDA_CHECK_LAUNCH(kernel);
}

}  // namespace

void adamw_update(int device, DType dtype, void* p, const void* g, void* m, void* v, int64_t n,
                  const AdamWCoefficients& c) {
  launch_update(device, dtype, n, "adamw_kernel", [&](auto zero, unsigned grid, cudaStream_t stream) {
    using T = decltype(zero);
    adamw_kernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m), static_cast<T*>(v), n, T(c.decay),
        T(c.w1), T(c.beta2), T(c.w2), T(c.root), T(c.eps), T(c.step_size));
  });
}

void sgd_update(int device, DType dtype, void* p, const void* g, void* buffer, int64_t n,
                const SgdCoefficients& c) {
  launch_update(device, dtype, n, "sgd_kernel", [&](auto zero, unsigned grid, cudaStream_t stream) {
    using T = decltype(zero);
    sgd_kernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(buffer), n, T(c.weight_decay),
        T(c.momentum), T(c.keep), T(c.rate), c.weight_decay != 0, c.first, c.nesterov);
  });
}

void lion_update(int device, DType dtype, void* p, const void* g, void* m, int64_t n,
                 const LionCoefficients& c) {
  launch_update(device, dtype, n, "lion_kernel", [&](auto zero, unsigned grid, cudaStream_t stream) {
    using T = decltype(zero);
    lion_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(p), static_cast<const T*>(g),
                                                  static_cast<T*>(m), n, T(c.decay), T(c.rate), T(c.beta1),
                                                  T(c.w1), T(c.beta2), T(c.w2));
  });
}

void squared_norm(int device, DType dtype, const void* x, int64_t n, double* partial, double* out) {
  cuda::use_device(device);
  const int64_t blocks = n > 0 ? (n + kNormBlock - 1) / kNormBlock : 1;
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    block_squares_kernel<T>
        <<<unsigned(blocks), kThreads, 0, cuda::stream_of(device)>>>(static_cast<const T*>(x), n, partial);
    DEW_CUDA_CHECK_LAUNCH("block_squares_kernel");
  });
  sum_in_order_kernel<<<1, 1, 0, cuda::stream_of(device)>>>(partial, blocks, out);
  DEW_CUDA_CHECK_LAUNCH("sum_in_order_kernel");
}

}  // namespace dew::ops::cuda_kernels
