// nn.Linear as the models write it: x @ W^T + b, then an activation, then + residual, in one GEMM with
// its epilogue. (f32 products apply an activation with the unary op's vector kernels after the product;
// bf16 epilogues apply it a value at a time: a wide GELU in bf16 goes faster as its own op after a plain
// linear.)
#pragma once

#include <dew/ops.h>

#include <algorithm>
#include <vector>

namespace dew::models {

// With glu, w's rows are a gated unit's gate rows then its up rows (MatmulOptions::glu).
inline Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = {}, const Tensor& residual = {},
                     Activation activation = Activation::none, bool glu = false) {
  MatmulOptions o;
  o.transpose_b = true;
  o.bias = bias;
  o.residual = residual;
  o.activation = activation;
  o.glu = glu;
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

// An MLP's gated unit, act(x Wg^T + bg) * (x Wu^T + bu): one product with the unit as its epilogue when
// the gate and up weights (and biases) lie one after the other in one storage
// (CausalLM::pack_projections), else the two products and the glu op.
inline Tensor gated_linear(const Tensor& x, const Tensor& gate_w, const Tensor& up_w, const Tensor& gate_b,
                           const Tensor& up_b, Activation activation) {
  const Tensor joined = Tensor::joined_view({gate_w, up_w});
  const bool biased = gate_b.defined() || up_b.defined();
  const Tensor joined_bias = biased ? Tensor::joined_view({gate_b, up_b}) : Tensor();
  const bool wide = x.dtype() == DType::f32 || x.dtype() == DType::f64;  // MatmulOptions::glu's dtypes
  if (wide && joined.defined() && gate_w.shape() == up_w.shape() && (!biased || joined_bias.defined()))
    return linear(x, joined, joined_bias, {}, activation, true);
  const std::vector<Tensor> gate_up = linears(x, {gate_w, up_w}, {gate_b, up_b});
  return activation == Activation::silu ? swiglu(gate_up[0], gate_up[1])
                                        : geglu(gate_up[0], gate_up[1], activation == Activation::gelu_tanh);
}

}  // namespace dew::models
