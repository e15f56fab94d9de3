// The layout ops on CUDA: tril/triu's zeroing kernel (cuda.cu); cuda.cc registers cuda.strided_copy.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dew::ops::cuda_kernels {

// Zeroes, in mats contiguous R x C matrices of element_size bytes, the elements above diagonal
// (lower: j > i + diagonal, tril) or below it (j < i + diagonal, triu).
void zero_triangle(int device, size_t element_size, void* data, int64_t mats, int64_t R, int64_t C,
                   int64_t diagonal, bool lower);

}  // namespace dew::ops::cuda_kernels
