// An activation applied after an f32 product, over the whole output by the unary op's vector kernels,
// then the residual: oneDNN's products with an activation, and the CPU's own (NOTE [activation after the
// product], matmul.h). And a gated unit after any product (NOTE [a gated unit after the product]).
#include <dew/runtime.h>

#include "ops/glu/glu.h"
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
  if (args.options.glu) return with_glu_after(args, out, product);
  if (args.options.activation == Activation::none || out.dtype() != DType::f32) return product(args, out);
  MatmulArgs plain = args;
  plain.options.activation = Activation::none;
  plain.options.residual = Tensor();
  product(plain, out);
  const Tensor residual = args.options.residual.defined() ? args.options.residual.contiguous() : Tensor();
  activation_in_place(args.options.activation, out, residual.defined() ? residual.data<float>() : nullptr);
}

void with_glu_after(const MatmulArgs& args, Tensor& out,
                    const std::function<void(const MatmulArgs&, Tensor&)>& product) {
  if (!args.options.glu) return product(args, out);
  MatmulArgs plain = args;
  plain.options.glu = false;
  plain.options.activation = Activation::none;
  Shape both = out.shape();
  const int64_t F = both.back();
  both.back() = 2 * F;
  Tensor z = Tensor::empty(both, out.dtype(), out.device());
  product(plain, z);
  std::vector<Tensor> outs{out};
  run_op_into<Glu>(
      GluArgs{Tensor(), z.slice(-1, 0, F), z.slice(-1, F, 2 * F), args.options.activation, false}, outs);
}

}  // namespace dew::ops
