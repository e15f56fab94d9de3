// The optimizers' updates as ops (adamw_update, sgd_update, lion_update: a parameter and its state in,
// the stepped parameter and state out, written in place by the public functions) and squared_norm, the
// sum of squares in double that gradient clipping needs. Not differentiable: they run under no grad.
#pragma once

#include <variant>

#include "ops/op.h"
#include "ops/optimizer/coefficients.h"

namespace dew::ops {

// state: AdamW {exp_avg, exp_avg_sq}; SGD {momentum_buffer}, or none without momentum; Lion {exp_avg}.
struct OptimizerUpdateArgs {
  Tensor param, grad;
  std::vector<Tensor> state;
  std::variant<AdamWStep, SgdStep, LionStep> step;
  DType dtype() const { return param.dtype(); }
  Device device() const { return param.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

// Outputs: the parameter, then each state tensor, stepped.
struct OptimizerUpdate {
  DEW_OP_TYPE_MEMBERS(OptimizerUpdateArgs);
  static std::string_view name(const Args& a);
  DEW_CASE_LABEL_BY_DTYPE;
  static Differentiation differentiation(std::string_view op);  // non-differentiable (rules.cc)
};

struct SquaredNorm {
  DEW_OP_TYPE_MEMBERS(OneInputArgs);
  static std::string_view name(const Args&) { return "squared_norm"; }
  DEW_CASE_LABEL_BY_DTYPE;
  static Differentiation differentiation(std::string_view op);  // non-differentiable (rules.cc)
};

AdamWCoefficients adamw_coefficients(const AdamWStep& s);
SgdCoefficients sgd_coefficients(const SgdStep& s, bool has_momentum);
LionCoefficients lion_coefficients(const LionStep& s);

// Every kernel updates in place: outputs that are not their inputs' own storage (the gate's fresh
// outputs) first receive the inputs' values. Returns the gradient, contiguous.
Tensor prepare_in_place(const OptimizerUpdateArgs& a, std::vector<Tensor>& outs);

void add_optimizer_update_portable(select::Registry<OptimizerUpdateArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_optimizer_update_cpu(select::Registry<OptimizerUpdateArgs>& r))
void add_optimizer_update_cuda(select::Registry<OptimizerUpdateArgs>& r);
void add_squared_norm_portable(select::Registry<OneInputArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_squared_norm_cpu(select::Registry<OneInputArgs>& r))
void add_squared_norm_cuda(select::Registry<OneInputArgs>& r);

}  // namespace dew::ops
