// cast on CUDA: the launcher cuda.cu defines and cuda.cc registers as cuda.elementwise.
#pragma once

#include <dew/dtype.h>

#include "cuda/view.h"

namespace dew::ops::cuda_kernels {

// y (contiguous, x's shape, dtype `to`) = x converted by cast.h's rules; x any strides.
void cast(int device, DType from, DType to, const cuda::View& x, void* y);

}  // namespace dew::ops::cuda_kernels
