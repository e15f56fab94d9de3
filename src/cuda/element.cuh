// Device element types: Dew's dtypes as CUDA's native types, the wider type an elementwise kernel
// computes in (NOTE [cuda transcendental precision]), strided element offsets, and the host-side
// dispatch from a DType to a kernel instantiation. For .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <dew/dtype.h>

#include "cuda/view.h"

#include <stdexcept>
#include <type_traits>

namespace dew::cuda {

// NOTE [cuda transcendental precision]
// Elementwise kernels compute f32 in f64 and bf16/f16 in f32 ("wide"), then round once. CUDA's
// single-precision expf, tanhf, erff and powf are up to 2-4 ulp off where glibc's are within one, and
// the gate holds a kernel to 1.5x the portable arm's error; one f64 evaluation rounded to f32 is
// (nearly) correctly rounded, and a memory-bound kernel does not feel the f64 arithmetic.
template <class T>
struct Wide {
  using type = float;  // bf16, f16
};
template <>
struct Wide<float> {
  using type = double;
};
template <>
struct Wide<double> {
  using type = double;
};
template <class T>
using wide_t = typename Wide<T>::type;

// f32 for bf16, f16 and f32, f64 for f64: the CPU's AccumulatorOf, the sums that must match its
// rounding, and the dtype of Dew's per-row statistics (rstd, mean, lse, the loss) and rope tables.
template <class T>
using accumulator_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

__device__ __forceinline__ float widen(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float widen(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ double widen(float x) {
  return double(x);
}
__device__ __forceinline__ double widen(double x) {
  return x;
}

// Rounds to nearest even; NaN stays NaN, overflow goes to Inf (dtype.h's contract).
template <class T>
__device__ __forceinline__ T narrow(wide_t<T> v);
template <>
__device__ __forceinline__ double narrow<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ float narrow<float>(double v) {
  return __double2float_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
  return __float2half_rn(v);
}

// Any value computed in f64 rounded once to T (nearest even; NaN and Inf kept).
template <class T>
__device__ __forceinline__ T from_double(double v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else if constexpr (std::is_same_v<T, float>)
    return __double2float_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __double2bfloat16(v);
  else
    return __double2half(v);
}

// Dew's storage types as CUDA's native ones (the same bits).
template <class T>
struct Native {
  using type = T;
};
template <>
struct Native<bf16> {
  using type = __nv_bfloat16;
};
template <>
struct Native<f16> {
  using type = __half;
};

// Calls f(T{}) with the native type of a floating dtype. Callers validated the dtype already (the
// selector's dtype requirement), so another dtype is a programming error.
template <class F>
void visit_floating(DType t, F&& f) {
  visit_dtype(t, [&](auto zero) {
    using S = decltype(zero);
    if constexpr (std::is_floating_point_v<S> || std::is_same_v<S, bf16> || std::is_same_v<S, f16>)
      f(typename Native<S>::type{});
    else
      throw std::logic_error("cuda::visit_floating: not a floating dtype");
  });
}

// The storage offset (in elements) of row-major element i of a view.
__device__ __forceinline__ int64_t element_offset(const View& v, int64_t i) {
  if (v.contiguous) return i;
  int64_t offset = 0;
  for (int d = v.rank - 1; d >= 0; --d) {
    const int64_t c = i % v.shape[d];
    i /= v.shape[d];
    offset += c * v.strides[d];
  }
  return offset;
}

}  // namespace dew::cuda
