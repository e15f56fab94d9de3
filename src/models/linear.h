// nn.Linear as the models write it: x @ W^T + b, then an activation, then + residual, in one GEMM with
// its epilogue. (matmul's f32 and bf16 epilogues apply an activation in a scalar pass: a wide GELU goes
// faster as its own vectorized op after a plain linear.)
#pragma once

#include <dew/ops.h>

namespace dew::models {

inline Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = {}, const Tensor& residual = {},
                     Activation activation = Activation::none) {
  MatmulOptions o;
  o.transpose_b = true;
  o.bias = bias;
  o.residual = residual;
  o.activation = activation;
  return matmul(x, w, o);
}

}  // namespace dew::models
