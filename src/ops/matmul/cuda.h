// matmul on CUDA: the epilogue kernel cuda.cu defines; cuda.cc drives cuBLASLt and registers
// cuda.cublaslt.
#pragma once

#include <dew/activation.h>
#include <dew/dtype.h>

#include <cstdint>

namespace dew::ops::cuda_kernels {

// y[r, n] = act(scale * acc[r, n] + bias[n]) + residual[r, n] over rows x N, computed in the wide type
// and rounded once to `dtype`. acc is f32 (f64 when dtype is f64); bias and residual (in `dtype`) may
// be null; y and residual are contiguous.
void matmul_epilogue(int device, DType dtype, const void* acc, const void* bias, const void* residual,
                     Activation act, double scale, void* y, int64_t rows, int64_t N);

}  // namespace dew::ops::cuda_kernels
