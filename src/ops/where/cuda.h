// where on CUDA: the launcher cuda.cu defines and cuda.cc registers as cuda.elementwise.
#pragma once

#include <cstddef>

#include "cuda/view.h"

namespace dew::ops::cuda_kernels {

// y (contiguous) = condition ? a : b, all three expanded to y's shape; elements of element_size bytes.
void where(int device, size_t element_size, const cuda::View& condition, const cuda::View& a,
           const cuda::View& b, void* y);

}  // namespace dew::ops::cuda_kernels
