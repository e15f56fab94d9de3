// where on CUDA: one thread per output element, a selection of bits (exact in every dtype).
#include "core/element_size.h"
#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/where/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

template <class E>
__global__ void where_kernel(cuda::View c, cuda::View a, cuda::View b, E* __restrict__ y, int64_t n) {
  const bool* pc = static_cast<const bool*>(c.data);
  const E* pa = static_cast<const E*>(a.data);
  const E* pb = static_cast<const E*>(b.data);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = pc[cuda::element_offset(c, i)] ? pa[cuda::element_offset(a, i)] : pb[cuda::element_offset(b, i)];
}

}  // namespace

void where(int device, size_t element_size, const cuda::View& condition, const cuda::View& a,
           const cuda::View& b, void* y) {
  const int64_t n = a.numel;
  if (n == 0) return;
  cuda::use_device(device);
  auto launch = [&](auto zero) {
    using E = decltype(zero);
    where_kernel<E><<<cuda::blocks_for(n, 256), 256, 0, cuda::stream_of(device)>>>(condition, a, b,
                                                                                   static_cast<E*>(y), n);
    DEW_CUDA_CHECK_LAUNCH("where_kernel");
  };
  dew::detail::visit_element_size(element_size, launch);
}

}  // namespace dew::ops::cuda_kernels
