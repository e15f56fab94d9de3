// The gated linear units on CUDA: one thread per element (grid-stride), or per 16-byte pack when the
// arrays are aligned (cuda/packed.cuh); activation.h's functions and derivatives in the wide type
// (NOTE [cuda transcendental precision]), one rounding per output.
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "cuda/packed.cuh"
#include "ops/activation.h"
#include "ops/glu/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

// One element: the forward act(g) u, or the backward's d(gate) = dy u act'(g) and d(up) = dy act(g).
template <class T>
struct GluElement {
  using W = cuda::wide_t<T>;
  Activation act;
  __device__ T operator()(T gate, T up) const {
    return cuda::narrow<T>(apply_activation(act, W(cuda::widen(gate))) * W(cuda::widen(up)));
  }
  __device__ void backward(T gate, T up, T dy, T& d_gate, T& d_up) const {
    const W g = cuda::widen(gate), u = cuda::widen(up), d = cuda::widen(dy);
    d_gate = cuda::narrow<T>(d * u * activation_derivative(act, g));
    d_up = cuda::narrow<T>(d * apply_activation(act, g));
  }
};

template <class T>
__global__ void glu_kernel(GluElement<T> f, const T* __restrict__ gate, const T* __restrict__ up,
                           const T* __restrict__ dy, int64_t n, T* __restrict__ out0, T* __restrict__ out1) {
  for (int64_t i = cuda::thread_index(); i < n; i += cuda::thread_stride()) {
    if (!dy)
      out0[i] = f(gate[i], up[i]);
    else
      f.backward(gate[i], up[i], dy[i], out0[i], out1[i]);
  }
}

// The backward over 16-byte packs, then the tail.
template <class T>
__global__ void glu_backward_packed(GluElement<T> f, const T* __restrict__ gate, const T* __restrict__ up,
                                    const T* __restrict__ dy, int64_t n, T* __restrict__ d_gate,
                                    T* __restrict__ d_up) {
  constexpr int N = cuda::kPack<T>;
  const int64_t packs = n / N;
  for (int64_t p = cuda::thread_index(); p < packs; p += cuda::thread_stride()) {
    const cuda::Pack<T> g = cuda::load_pack(gate, p), u = cuda::load_pack(up, p), d = cuda::load_pack(dy, p);
    cuda::Pack<T> dg, du;
#pragma unroll
    for (int k = 0; k < N; ++k) f.backward(g.e[k], u.e[k], d.e[k], dg.e[k], du.e[k]);
    cuda::store_pack(d_gate, p, dg);
    cuda::store_pack(d_up, p, du);
  }
  for (int64_t i = packs * N + cuda::thread_index(); i < n; i += cuda::thread_stride())
    f.backward(gate[i], up[i], dy[i], d_gate[i], d_up[i]);
}

constexpr int kThreads = 256;

}  // namespace

void glu(int device, Activation act, DType dtype, const void* gate, const void* up, const void* dy, int64_t n,
         void* out0, void* out1) {
  if (n == 0) return;
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  const bool packed = cuda::aligned16(gate) && cuda::aligned16(up) && cuda::aligned16(out0) &&
                      (!dy || (cuda::aligned16(dy) && cuda::aligned16(out1)));
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    const GluElement<T> f{act};
    const T *g = static_cast<const T*>(gate), *u = static_cast<const T*>(up), *d = static_cast<const T*>(dy);
    T *o0 = static_cast<T*>(out0), *o1 = static_cast<T*>(out1);
    const unsigned pack_blocks = cuda::packed_blocks(n, kThreads, cuda::kPack<T>);
    if (packed && !dy) {
      cuda::map2_packed<<<pack_blocks, kThreads, 0, stream>>>(f, g, u, o0, n);
      DEW_CUDA_CHECK_LAUNCH("glu map2_packed");
    } else if (packed) {
      glu_backward_packed<T><<<pack_blocks, kThreads, 0, stream>>>(f, g, u, d, n, o0, o1);
      DEW_CUDA_CHECK_LAUNCH("glu_backward_packed");
    } else {
      glu_kernel<T><<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(f, g, u, d, n, o0, o1);
      DEW_CUDA_CHECK_LAUNCH("glu_kernel");
    }
  });
}

}  // namespace dew::ops::cuda_kernels
