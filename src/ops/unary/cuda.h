// Unary ops on CUDA: the launcher cuda.cu defines and cuda.cc registers as cuda.elementwise.
#pragma once

#include <dew/dtype.h>

#include "cuda/view.h"
#include "ops/unary/unary_fn.h"

namespace dew::ops::cuda_kernels {

// y (contiguous, x's shape and dtype) = fn(x), x any strides; on x's device's stream.
void unary(int device, UnaryFn fn, DType dtype, const cuda::View& x, void* y);

}  // namespace dew::ops::cuda_kernels
