// An activation applied after an f32 product, over the whole output by the unary op's vector kernels,
// then the residual: oneDNN's products with an activation, and the CPU's own (NOTE [activation after the
// product], matmul.h).
#include <dew/runtime.h>

#include "ops/matmul/matmul.h"
#include "ops/unary/unary.h"

namespace dew::ops {

void activation_in_place(Activation activation, Tensor& c, const float* residual) {
  UnaryArgs u;
  u.x = c, u.fn = unary_of(activation);
  std::vector<Tensor> outs{c};
  run_op_into<Unary>(u, outs);
  if (!residual) return;
  float* C = c.data<float>();
  parallel_for(c.numel(), 16384, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) C[i] += residual[i];
  });
}

void with_activation_after(const MatmulArgs& args, Tensor& out,
                           const std::function<void(const MatmulArgs&, Tensor&)>& product) {
  if (args.options.activation == Activation::none || out.dtype() != DType::f32) return product(args, out);
  MatmulArgs plain = args;
  plain.options.activation = Activation::none;
  plain.options.residual = Tensor();
  product(plain, out);
  const Tensor residual = args.options.residual.defined() ? args.options.residual.contiguous() : Tensor();
  activation_in_place(args.options.activation, out, residual.defined() ? residual.data<float>() : nullptr);
}

}  // namespace dew::ops
