// group_norm over images or any (B,C,...): per image and group of C/G channels, mean and rstd over the
// group's channels and positions (biased variance, two passes), then a per-channel weight and bias
// (C, optional). Outputs y (x's dtype), mean and rstd (B,G) (f32, f64 for f64 input). A group of a
// contiguous x is one contiguous row of (C/G)*positions values, so its rules are layer_norm's on those
// rows (layer_norm_backward carries the gradients of gradients).
#pragma once

#include <dew/image_ops.h>

#include "ops/op.h"

namespace dew::ops {

struct GroupNormArgs {
  Tensor x, weight, bias;
  int64_t groups = 32;
  double eps = 1e-5;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct GroupNorm {
  DEW_OP_TYPE_MEMBERS(GroupNormArgs);
  static std::string_view name(const Args&) { return "group_norm"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

void add_group_norm_portable(select::Registry<GroupNormArgs>& r);

}  // namespace dew::ops
