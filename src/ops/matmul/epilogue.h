// The GEMM epilogue, one definition for every implementation, host and device:
// act(scale*acc + bias) + residual.
#pragma once

#include "ops/activation.h"
#include "ops/host_device.h"

namespace dew::ops {

template <class T>
DEW_HOST_DEVICE T matmul_epilogue(Activation act, T scale, T acc, T bias, T residual) {
  return apply_activation(act, scale * acc + bias) + residual;
}

// With the call's MatmulOptions (a template, so that kernel files need not see dew/ops.h).
template <class T, class Options>
T matmul_epilogue(const Options& o, T acc, T bias, T residual) {
  return matmul_epilogue(o.activation, T(o.scale), acc, bias, residual);
}

}  // namespace dew::ops
