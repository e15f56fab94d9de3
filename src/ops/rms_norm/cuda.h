// rms_norm and its backward on CUDA: the launchers cuda.cu defines and cuda.cc registers as
// cuda.block_per_row.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

namespace dew::ops::cuda_kernels {

// y = x * rstd * weight and rstd per row, for rows x C contiguous; weight may be null; rstd is f32
// (f64 when dtype is f64).
void rms_norm_forward(int device, DType dtype, const void* x, const void* weight, double eps, int64_t rows,
                      int64_t C, void* y, void* rstd);

// dx, and dweight (when weight is not null) summed over fixed blocks of kWeightGradBlockRows rows in
// order, so the result does not depend on the launch.
void rms_norm_backward(int device, DType dtype, const void* dy, const void* x, const void* weight,
                       const void* rstd, int64_t rows, int64_t C, int64_t block_rows, void* dx,
                       void* dweight);

}  // namespace dew::ops::cuda_kernels
