// The indexing ops on CUDA. Copies move elements by size (any dtype); the sums run one thread per
// output column or line, in index order, so every launch gives the same result as the CPU's order.
#include "core/element_size.h"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/index/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

constexpr int kThreads = 256;

template <class E>
__global__ void select_rows_kernel(const E* __restrict__ x, int64_t length, int64_t inner,
                                   const int64_t* __restrict__ idx, int64_t K, int64_t n,
                                   E* __restrict__ out) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % inner, k = (e / inner) % K, o = e / (inner * K);
    out[e] = x[(o * length + idx[k]) * inner + j];
  }
}

// The offset in contiguous x of index element i (coordinates from index's shape, axis from index).
__device__ int64_t offset_in_x(const cuda::View& xs, const cuda::View& is, const int64_t* index, int axis,
                               int64_t i) {
  int64_t rest = i, off = 0, stride = 1;
  for (int d = is.rank - 1; d >= 0; --d) {
    const int64_t c = rest % is.shape[d];
    rest /= is.shape[d];
    off += (d == axis ? index[i] : c) * stride;
    stride *= xs.shape[d];
  }
  return off;
}

template <class E>
__global__ void gather_kernel(const E* __restrict__ x, cuda::View xs, const int64_t* __restrict__ index,
                              cuda::View is, int axis, E* __restrict__ out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < is.numel;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = x[offset_in_x(xs, is, index, axis, i)];
}

// One thread per line of index (all coordinates but the axis), walking the axis in order.
template <class T, class Acc>
__global__ void scatter_add_kernel(const int64_t* __restrict__ index, const T* __restrict__ src,
                                   cuda::View xs, cuda::View is, int axis, int64_t lines,
                                   Acc* __restrict__ acc) {
  const int64_t along = is.shape[axis];
  int64_t inner = 1;
  for (int d = axis + 1; d < is.rank; ++d) inner *= is.shape[d];
  for (int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += int64_t(gridDim.x) * blockDim.x) {
    const int64_t first =
        (line / inner) * along * inner + line % inner;  // index element at axis coordinate 0
    for (int64_t a = 0; a < along; ++a) {
      const int64_t i = first + a * inner;
      acc[offset_in_x(xs, is, index, axis, i)] += Acc(cuda::widen(src[i]));
    }
  }
}

template <class T, class Acc>
__global__ void widen_kernel(const T* __restrict__ x, int64_t n, Acc* __restrict__ acc) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    acc[i] = Acc(cuda::widen(x[i]));
}

template <class T, class Acc>
__global__ void narrow_kernel(const Acc* __restrict__ acc, int64_t n, T* __restrict__ out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = cuda::from_double<T>(double(acc[i]));
}

// One thread per column, the rows in order: each (id, column) sum in id order, as the CPU's.
template <class T, class Acc>
__global__ void embedding_backward_kernel(const T* __restrict__ d, const int64_t* __restrict__ ids,
                                          int64_t rows, int64_t C, Acc* __restrict__ acc) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int64_t r = 0; r < rows; ++r) acc[ids[r] * C + c] += Acc(cuda::widen(d[r * C + c]));
}

__global__ void one_hot_kernel(const int64_t* __restrict__ idx, int64_t n, int64_t count,
                               int64_t* __restrict__ out) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < n;
       r += int64_t(gridDim.x) * blockDim.x)
    out[r * count + idx[r]] = 1;
}

}  // namespace

void select_rows(int device, size_t element_size, const void* x, int64_t outer, int64_t length, int64_t inner,
                 const int64_t* idx, int64_t K, void* out) {
  const int64_t n = outer * K * inner;
  if (n == 0) return;
  cuda::use_device(device);
  dew::detail::visit_element_size(element_size, [&](auto zero) {
    using E = decltype(zero);
    select_rows_kernel<E><<<cuda::blocks_for(n, kThreads), kThreads, 0, cuda::stream_of(device)>>>(
        static_cast<const E*>(x), length, inner, idx, K, n, static_cast<E*>(out));
    DEW_CUDA_CHECK_LAUNCH("select_rows_kernel");
  });
}

void gather(int device, size_t element_size, const void* x, const cuda::View& x_shape, const int64_t* index,
            const cuda::View& index_shape, int axis, void* out) {
  if (index_shape.numel == 0) return;
  cuda::use_device(device);
  dew::detail::visit_element_size(element_size, [&](auto zero) {
    using E = decltype(zero);
    gather_kernel<E><<<cuda::blocks_for(index_shape.numel, kThreads), kThreads, 0, cuda::stream_of(device)>>>(
        static_cast<const E*>(x), x_shape, index, index_shape, axis, static_cast<E*>(out));
    DEW_CUDA_CHECK_LAUNCH("gather_kernel");
  });
}

void scatter_add(int device, DType dtype, const void* x, const cuda::View& x_shape, const int64_t* index,
                 const void* src, const cuda::View& index_shape, int axis, void* out) {
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using A = cuda::accumulator_t<T>;
    const int64_t n = x_shape.numel;
    if (n == 0) return;
    cuda::DeviceBuffer<A> acc(device, n);
    widen_kernel<T, A>
        <<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(x), n, acc.data());
    DEW_CUDA_CHECK_LAUNCH("scatter_add widen_kernel");
    const int64_t along = index_shape.rank ? index_shape.shape[axis] : 1;
    const int64_t lines = along ? index_shape.numel / along : 0;
    if (lines > 0) {
      scatter_add_kernel<T, A><<<cuda::blocks_for(lines, kThreads), kThreads, 0, stream>>>(
          index, static_cast<const T*>(src), x_shape, index_shape, axis, lines, acc.data());
      DEW_CUDA_CHECK_LAUNCH("scatter_add_kernel");
    }
    narrow_kernel<T, A>
        <<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(acc.data(), n, static_cast<T*>(out));
    DEW_CUDA_CHECK_LAUNCH("scatter_add narrow_kernel");
  });
}

void embedding_backward(int device, DType dtype, const void* d, const int64_t* ids, int64_t rows, int64_t C,
                        int64_t count, void* out) {
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  cuda::visit_floating(dtype, [&](auto zero) {
    using T = decltype(zero);
    using A = cuda::accumulator_t<T>;
    const int64_t n = count * C;
    if (n == 0) return;
    cuda::DeviceBuffer<A> acc(device, n);
    DEW_CUDA_CHECK(cudaMemsetAsync(acc.data(), 0, size_t(n) * sizeof(A), stream));
    if (rows > 0 && C > 0) {
      embedding_backward_kernel<T, A><<<cuda::blocks_for(C, kThreads), kThreads, 0, stream>>>(
          static_cast<const T*>(d), ids, rows, C, acc.data());
      DEW_CUDA_CHECK_LAUNCH("embedding_backward_kernel");
    }
    narrow_kernel<T, A>
        <<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(acc.data(), n, static_cast<T*>(out));
    DEW_CUDA_CHECK_LAUNCH("embedding_backward narrow_kernel");
  });
}

void one_hot(int device, const int64_t* idx, int64_t n, int64_t count, int64_t* out) {
  cuda::use_device(device);
  const cudaStream_t stream = cuda::stream_of(device);
  DEW_CUDA_CHECK(cudaMemsetAsync(out, 0, size_t(n * count) * sizeof(int64_t), stream));
  if (n == 0) return;
  one_hot_kernel<<<cuda::blocks_for(n, kThreads), kThreads, 0, stream>>>(idx, n, count, out);
  DEW_CUDA_CHECK_LAUNCH("one_hot_kernel");
}

}  // namespace dew::ops::cuda_kernels
