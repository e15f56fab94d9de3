// softmax, log_softmax and cumsum on CUDA: the launcher cuda.cu defines and cuda.cc registers as
// cuda.block_per_row.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

#include "ops/along_axis/along_axis_fn.h"

namespace dew::ops::cuda_kernels {

// y[r, :] = fn(x[r, :]) for contiguous rows of length n; y in x's dtype.
void along_rows(int device, AlongAxisFn fn, DType dtype, const void* x, int64_t rows, int64_t n, void* y);

}  // namespace dew::ops::cuda_kernels
