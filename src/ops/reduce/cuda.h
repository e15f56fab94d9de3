// Reductions on CUDA: the launcher cuda.cu defines and cuda.cc registers as cuda.block_per_row.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

#include "ops/reduce/reduce_fn.h"

namespace dew::ops::cuda_kernels {

// y[r] = fn(x[r, 0..n)) for contiguous rows of x; y in x's dtype, or i64 for argmax.
void reduce_rows(int device, ReduceFn fn, DType dtype, const void* x, int64_t rows, int64_t n, void* y);

}  // namespace dew::ops::cuda_kernels
