// cast on CUDA: every pair of dtypes, by cast.h's rules, each conversion one rounding (through f64,
// which holds every value of every dtype but i64 beyond 2^53 exactly, as the CPU's conversion does).
#include <cmath>
#include <limits>

#include "cuda/element.cuh"
#include "cuda/launch.h"
#include "ops/cast/cuda.h"

namespace dew::ops::cuda_kernels {
namespace {

template <class T>
__device__ double to_double(T v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return double(__bfloat162float(v));
  else if constexpr (std::is_same_v<T, __half>)
    return double(__half2float(v));
  else
    return double(v);
}

template <class To, class From>
__device__ To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return to_double(v) != 0.0;
  } else if constexpr (std::is_integral_v<To>) {  // truncate, saturate, NaN -> 0
    double d = to_double(v);
    if (d != d) return To(0);
    d = trunc(d);
    if (d <= double(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (d >= double(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return To(d);
  } else {
    return cuda::from_double<To>(to_double(v));
  }
}

template <class To, class From>
__global__ void cast_kernel(cuda::View x, To* __restrict__ y, int64_t n) {
  const From* src = static_cast<const From*>(x.data);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = convert<To>(src[cuda::element_offset(x, i)]);
}

constexpr int kThreads = 256;

}  // namespace

void cast(int device, DType from, DType to, const cuda::View& x, void* y) {
  if (x.numel == 0) return;
  cuda::use_device(device);
  visit_dtype(from, [&](auto from_zero) {
    visit_dtype(to, [&](auto to_zero) {
      using From = typename cuda::Native<decltype(from_zero)>::type;
      using To = typename cuda::Native<decltype(to_zero)>::type;
      cast_kernel<To, From><<<cuda::blocks_for(x.numel, kThreads), kThreads, 0, cuda::stream_of(device)>>>(
          x, static_cast<To*>(y), x.numel);
      DEW_CUDA_CHECK_LAUNCH("cast_kernel");
    });
  });
}

}  // namespace dew::ops::cuda_kernels
