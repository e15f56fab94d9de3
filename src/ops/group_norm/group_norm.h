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

// group_norm_backward(dy, x, weight, mean, rstd) -> dx, and dweight and dbias when weight is given:
// per (image, group) row, g = dy w, xhat = (x - mean) rstd, dx = rstd (g - mean(g) - xhat mean(g xhat));
// dweight and dbias sum dy xhat and dy per image, then over images in order. Composite: on inputs that
// need a derivative the public function computes with layer_norm_backward on the rows and ops, which
// carry it (rules.cc); the fused kernel runs only where none is needed.
struct GroupNormBackwardArgs {
  Tensor dy, x, weight, mean, rstd;
  int64_t groups = 32;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct GroupNormBackward {
  DEW_OP_TYPE_MEMBERS(GroupNormBackwardArgs);
  static std::string_view name(const Args&) { return "group_norm_backward"; }
  DEW_CASE_LABEL_BY_DTYPE;
  static Differentiation differentiation(std::string_view) { return Differentiation::composite; }
};

// The gradients of group_norm's inputs (dweight, dbias when weight is given), by the fused kernel or,
// where a derivative of them is needed, by the composite.
std::vector<Tensor> group_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                        const Tensor& mean, const Tensor& rstd, int64_t groups);

void add_group_norm_portable(select::Registry<GroupNormArgs>& r);
void add_group_norm_backward_portable(select::Registry<GroupNormBackwardArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_group_norm_cpu(select::Registry<GroupNormArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_group_norm_backward_cpu(select::Registry<GroupNormBackwardArgs>& r))

}  // namespace dew::ops
