// Gated linear units, fused: swiglu(gate, up) = silu(gate) * up; geglu = gelu(gate) * up (erf form);
// geglu_tanh with the tanh approximation (Gemma's gelu_pytorch_tanh). gate and up have one shape and
// dtype. The backward ops take (dy, gate, up) and give (d_gate, d_up).
#pragma once

#include "ops/op.h"

namespace dew::ops {

struct GluArgs {
  Tensor dy, gate, up;  // dy only for the backward ops
  Activation activation;
  bool backward = false;
  DType dtype() const { return gate.dtype(); }
  Device device() const { return gate.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct Glu {
  DEW_OP_TYPE_MEMBERS(GluArgs);
  static std::string_view name(const Args& a);
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

void add_glu_portable(select::Registry<GluArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_glu_cpu(select::Registry<GluArgs>& r))
void add_glu_cuda(select::Registry<GluArgs>& r);

}  // namespace dew::ops
