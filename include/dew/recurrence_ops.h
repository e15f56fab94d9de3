// The recurrence op family's public functions (docs/recurrence.md): the short causal convolution of
// the hybrid models' layers. Differentiable in both modes, like every op (ops.h).
#pragma once

#include <dew/tensor.h>

namespace dew {

// Causal depthwise convolution over time: x (B,T,C), weight (C,W) (nn.Conv1d's (C,1,W) without the
// middle axis), bias (C) or undefined, initial (B,W-1,C) the inputs before t = 0 (a decode cache: the
// previous call's last W - 1 inputs) or undefined for zeros -> (B,T,C).
Tensor short_conv(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Tensor& initial = {});

}  // namespace dew
