// layer_norm and its backward on CUDA: the launchers cuda.cu defines and cuda.cc registers as
// cuda.block_per_row.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

namespace dew::ops::cuda_kernels {

// y = (x - mean) * rstd * weight + bias, with mean and rstd per row (f32; f64 for f64); weight and
// bias may be null. rows x C contiguous.
void layer_norm_forward(int device, DType dtype, const void* x, const void* weight, const void* bias,
                        double eps, int64_t rows, int64_t C, void* y, void* mean, void* rstd);

// dx, and dweight and dbias (when weight is not null) summed over fixed blocks of block_rows rows.
void layer_norm_backward(int device, DType dtype, const void* dy, const void* x, const void* weight,
                         const void* mean, const void* rstd, int64_t rows, int64_t C, int64_t block_rows,
                         void* dx, void* dweight, void* dbias);

}  // namespace dew::ops::cuda_kernels
