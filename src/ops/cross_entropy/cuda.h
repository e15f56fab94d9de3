// cross_entropy on CUDA: the launcher cuda.cu defines and cuda.cc registers as cuda.block_per_row.
#pragma once

#include <dew/dtype.h>

#include <cstdint>

namespace dew::ops::cuda_kernels {

// cross_entropy.h's outputs for N rows of V contiguous logits: loss (scalar) and lse (N) in f32 (f64
// for f64 logits), d_logits in the logits' dtype. weights (N, like loss) may be null; targets are
// valid classes or ignore_index (infer checked them).
void cross_entropy(int device, DType dtype, const void* logits, const int64_t* targets, const void* weights,
                   int64_t ignore_index, double z_loss, int64_t N, int64_t V, void* loss, void* d_logits,
                   void* lse);

}  // namespace dew::ops::cuda_kernels
