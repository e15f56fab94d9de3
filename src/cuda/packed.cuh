// 16-byte loads and stores for elementwise kernels over contiguous arrays: a Pack holds the elements
// of one 16-byte word (8 bf16 or f16, 4 f32, 2 f64), so a warp moves 512 bytes per instruction
// instead of 64 (2-byte elements one by one). A kernel takes the packed loop when every array it
// touches is contiguous and 16-byte aligned, and finishes the last n % kPack elements one by one;
// each element's arithmetic is the same either way, so the bits are too.
#pragma once

#include <cstdint>

#include "cuda/launch.h"

namespace dew::cuda {

template <class T>
inline constexpr int kPack = 16 / int(sizeof(T));

template <class T>
struct alignas(16) Pack {
  T e[kPack<T>];
};

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Pack i of p (elements [i * kPack, (i + 1) * kPack)); p 16-byte aligned.
template <class T>
__device__ __forceinline__ Pack<T> load_pack(const T* p, int64_t i) {
  return reinterpret_cast<const Pack<T>*>(p)[i];
}
template <class T>
__device__ __forceinline__ void store_pack(T* p, int64_t i, const Pack<T>& v) {
  reinterpret_cast<Pack<T>*>(p)[i] = v;
}

// The grid-stride loops of a packed kernel: packs [0, n / kPack), then the tail elements.
__device__ __forceinline__ int64_t thread_index() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t thread_stride() {
  return int64_t(gridDim.x) * blockDim.x;
}

// y[i] = f(x[i]) and y[i] = f(a[i], b[i]) over contiguous, 16-byte aligned arrays of n elements.
template <class T, class F>
__global__ void map1_packed(F f, const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  constexpr int N = kPack<T>;
  const int64_t packs = n / N;
  for (int64_t p = thread_index(); p < packs; p += thread_stride()) {
    Pack<T> v = load_pack(x, p);
#pragma unroll
    for (int k = 0; k < N; ++k) v.e[k] = f(v.e[k]);
    store_pack(y, p, v);
  }
  for (int64_t i = packs * N + thread_index(); i < n; i += thread_stride()) y[i] = f(x[i]);
}
template <class T, class F>
__global__ void map2_packed(F f, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y,
                            int64_t n) {
  constexpr int N = kPack<T>;
  const int64_t packs = n / N;
  for (int64_t p = thread_index(); p < packs; p += thread_stride()) {
    Pack<T> v = load_pack(a, p);
    const Pack<T> w = load_pack(b, p);
#pragma unroll
    for (int k = 0; k < N; ++k) v.e[k] = f(v.e[k], w.e[k]);
    store_pack(y, p, v);
  }
  for (int64_t i = packs * N + thread_index(); i < n; i += thread_stride()) y[i] = f(a[i], b[i]);
}

// Blocks for a packed kernel over n elements: one thread per pack.
inline unsigned packed_blocks(int64_t n, int threads, int pack) {
  return blocks_for((n + pack - 1) / pack, threads);
}

}  // namespace dew::cuda
