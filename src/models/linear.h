// nn.Linear as the models write it: x @ W^T + b, then an activation, then + residual, in one GEMM with
// its epilogue. (f32 products apply an activation with the unary op's vector kernels after the product;
// bf16 epilogues apply it a value at a time: a wide GELU in bf16 goes faster as its own op after a plain
// linear.)
#pragma once

#include <dew/ops.h>

#include <algorithm>
#include <vector>

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

// x's products with weights that share it (q, k and v; gate and up), each with its bias or none: one
// product when the weights lie one after another in one storage (CausalLM::pack_projections: fewer,
// wider products), else one each. The outputs are views of the joined product's columns then.
inline std::vector<Tensor> linears(const Tensor& x, const std::vector<Tensor>& weights,
                                   const std::vector<Tensor>& biases) {
  const Tensor joined = Tensor::joined_view(weights);
  const bool biased = std::any_of(biases.begin(), biases.end(), [](const Tensor& b) { return b.defined(); });
  const Tensor joined_bias = biased ? Tensor::joined_view(biases) : Tensor();
  std::vector<Tensor> outs;
  if (!joined.defined() || (biased && !joined_bias.defined())) {
    for (size_t i = 0; i < weights.size(); ++i) outs.push_back(linear(x, weights[i], biases[i]));
    return outs;
  }
  const Tensor y = linear(x, joined, joined_bias);
  int64_t column = 0;
  for (const Tensor& w : weights) {
    outs.push_back(y.slice(-1, column, column + w.size(0)));
    column += w.size(0);
  }
  return outs;
}

}  // namespace dew::models
