// The optimizer ops on CUDA: the launchers cuda.cu defines and cuda.cc registers as cuda.elementwise
// (the updates, in place on contiguous data) and cuda.block_sums (squared_norm).
#pragma once

#include <dew/dtype.h>

#include <cstdint>

#include "ops/optimizer/coefficients.h"

namespace dew::ops::cuda_kernels {

// dtype f32 or f64; p, m, v, buffer hold n elements, written in place; buffer may be null.
void adamw_update(int device, DType dtype, void* p, const void* g, void* m, void* v, int64_t n,
                  const AdamWCoefficients& c);
void sgd_update(int device, DType dtype, void* p, const void* g, void* buffer, int64_t n,
                const SgdCoefficients& c);
void lion_update(int device, DType dtype, void* p, const void* g, void* m, int64_t n,
                 const LionCoefficients& c);

// out (one double) = sum of x^2 over n contiguous elements of a floating dtype: each block of kNormBlock
// elements summed in double by one thread block (a fixed tree), into partial (one double per block),
// then the blocks in order: the same bits on every run.
void squared_norm(int device, DType dtype, const void* x, int64_t n, double* partial, double* out);

}  // namespace dew::ops::cuda_kernels
