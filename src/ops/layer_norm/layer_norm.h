// layer_norm over the last dim C: y = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + eps) with
// the biased variance (two passes: the mean first). weight and bias (C) optional. Outputs y (x's
// dtype), mean and rstd (rows; f32, f64 for f64 input). layer_norm_backward(dy, x, weight, mean,
// rstd) -> dx, and dweight and dbias when weight is given (summed over rows in fixed blocks).
#pragma once

#include "ops/op.h"

namespace dew::ops {

struct LayerNormArgs {
  Tensor dy, x, weight, bias, mean, rstd;  // dy, mean, rstd: backward only; bias: forward only
  double eps = 1e-5;
  bool backward = false;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct LayerNorm {
  DEW_OP_TYPE_MEMBERS(LayerNormArgs);
  static std::string_view name(const Args& a) { return a.backward ? "layer_norm_backward" : "layer_norm"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

// Rows of the fixed blocks whose partial weight and bias gradients are summed in order.
inline constexpr int64_t kLayerNormBlockRows = 32;

void add_layer_norm_portable(select::Registry<LayerNormArgs>& r);
void add_layer_norm_cuda(select::Registry<LayerNormArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_layer_norm_cpu(select::Registry<LayerNormArgs>& r))

}  // namespace dew::ops
