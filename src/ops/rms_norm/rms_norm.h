// rms_norm: y = x * rstd * weight over the last dim C, rstd = 1/sqrt(mean(x^2) + eps), weight (C)
// optional. Outputs y (x's dtype) and rstd (rows; f32, f64 for f64 input) for the backward op.
// rms_norm_backward(dy, x, weight, rstd) -> dx, and dweight when weight is given (summed over rows
// in fixed blocks, so the result does not depend on the thread count).
#pragma once

#include "ops/op.h"

namespace dew::ops {

struct RmsNormArgs {
  Tensor x, weight;
  double eps;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct RmsNorm {
  DEW_OP_TYPE_MEMBERS(RmsNormArgs);
  static std::string_view name(const Args&) { return "rms_norm"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

struct RmsNormBackwardArgs {
  Tensor dy, x, weight, rstd;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct RmsNormBackward {
  DEW_OP_TYPE_MEMBERS(RmsNormBackwardArgs);
  static std::string_view name(const Args&) { return "rms_norm_backward"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;  // second derivatives through the fused backward (rules.cc)
};

// Rows of the fixed blocks whose partial weight gradients are summed in order (thread-independent).
inline constexpr int64_t kWeightGradBlockRows = 32;

void add_rms_norm_portable(select::Registry<RmsNormArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_rms_norm_cpu(select::Registry<RmsNormArgs>& r))
void add_rms_norm_backward_portable(select::Registry<RmsNormBackwardArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_rms_norm_backward_cpu(select::Registry<RmsNormBackwardArgs>& r))
void add_rms_norm_cuda(select::Registry<RmsNormArgs>& r);
void add_rms_norm_backward_cuda(select::Registry<RmsNormBackwardArgs>& r);

}  // namespace dew::ops
