// rope on CUDA: the launcher cuda.cu defines and cuda.cc registers as cuda.elementwise.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

namespace dew::ops::cuda_kernels {

// y = x (B*T rows of H heads of D, contiguous) rotated at positions (B*T) by the tables cos/sin
// (P, half), f32 (f64 for f64 x); dims past 2*half pass through.
void rope(int device, DType dtype, const void* x, const int64_t* positions, const void* cos, const void* sin,
          int64_t BT, int64_t H, int64_t D, int64_t half, bool interleaved, void* y);

}  // namespace dew::ops::cuda_kernels
