// The GEMM epilogue, one definition for every implementation: act(scale*acc + bias) + residual.
#pragma once

#include <dew/ops.h>

#include "ops/activation.h"

namespace dew::ops {

template <class T>
T matmul_epilogue(const MatmulOptions& o, T acc, T bias, T residual) {
  return apply_activation(o.activation, T(o.scale) * acc + bias) + residual;
}

}  // namespace dew::ops
