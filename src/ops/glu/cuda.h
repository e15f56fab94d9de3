// The gated linear units on CUDA: the launcher cuda.cu defines and cuda.cc registers as
// cuda.elementwise.
#pragma once

#include <dew/activation.h>
#include <dew/dtype.h>

#include <cstdint>

namespace dew::ops::cuda_kernels {

// Forward (dy null): out0 = act(gate) * up. Backward: out0 = d_gate = dy * up * act'(gate),
// out1 = d_up = dy * act(gate). n contiguous elements of one dtype.
void glu(int device, Activation act, DType dtype, const void* gate, const void* up, const void* dy, int64_t n,
         void* out0, void* out1);

}  // namespace dew::ops::cuda_kernels
