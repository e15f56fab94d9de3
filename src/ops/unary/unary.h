// The one-input elementwise ops (neg abs exp log sqrt rsqrt square tanh sigmoid silu gelu gelu_tanh
// relu): one family type, one op name per function, the output in the input's dtype.
#pragma once

#include "ops/op.h"
#include "ops/unary/unary_fn.h"

namespace dew::ops {

std::string_view unary_name(UnaryFn f);
UnaryFn unary_from_name(std::string_view name);

struct UnaryArgs : OneInputArgs {
  UnaryFn fn;
};

struct Unary {
  using Args = UnaryArgs;
  static std::string_view name(const Args& a) { return unary_name(a.fn); }
  static std::string case_label(const Args& a) { return std::string(dtype_name(a.dtype())); }
  static std::vector<OutputSpec> infer(const Args& a);
  static std::vector<Truth> reference(const Args& args64);
  static const select::Registry<Args>& registry();
  static std::vector<Case<Args>> cases(std::string_view op);
  DEW_OP_RULES;
};

// g * f'(x) with ops, g a gradient or a tangent of x's shape; y = f(x) (read by exp, sqrt, rsqrt, tanh
// and sigmoid only).
Tensor times_unary_derivative(UnaryFn f, const Tensor& g, const Tensor& x, const Tensor& y);
// The unary function a fused activation (matmul's epilogue, a GLU's gate) applies.
UnaryFn unary_of(Activation act);

// Whether cpu.table computes f on dtype (NOTE [unary maps by table]).
bool unary_by_table(UnaryFn f, DType dtype);

void add_unary_table(select::Registry<UnaryArgs>& r);
void add_unary_portable(select::Registry<UnaryArgs>& r);
void add_unary_cuda(select::Registry<UnaryArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_unary_cpu(select::Registry<UnaryArgs>& r))

}  // namespace dew::ops
