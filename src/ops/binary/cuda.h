// Binary ops on CUDA: the launcher cuda.cu defines and cuda.cc registers as cuda.elementwise.
#pragma once

#include <dew/dtype.h>

#include "cuda/view.h"
#include "ops/binary/binary_fn.h"

namespace dew::ops::cuda_kernels {

// y (contiguous) = fn(a, b), with a and b already expanded to y's shape (broadcast dims have stride 0);
// y is in their dtype, or bool for comparisons.
void binary(int device, BinaryFn fn, DType dtype, const cuda::View& a, const cuda::View& b, void* y);

}  // namespace dew::ops::cuda_kernels
