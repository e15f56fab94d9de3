// cross_entropy(logits (N, V), targets (N) i64; ignore_index, per-token weights (N), z_loss):
//   loss = sum_i w_i (lse_i - logits[i, t_i] + z_loss lse_i^2) / sum_i w_i over rows with t_i != ignore_index
// (0 when no row counts), with its gradient d_logits = d loss / d logits and each row's lse, computed
// in one op: a pass over each row for lse (online max and sum), a second writing d_logits.
// Outputs: loss (scalar, f32; f64 for f64 logits), d_logits (logits' dtype), lse (N, like loss).
#pragma once

#include "ops/op.h"

namespace dew::ops {

struct CrossEntropyArgs {
  Tensor logits, targets, weights;
  int64_t ignore_index = -100;
  double z_loss = 0;
  DType dtype() const { return logits.dtype(); }
  Device device() const { return logits.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct CrossEntropy {
  DEW_OP_TYPE_MEMBERS(CrossEntropyArgs);
  static std::string_view name(const Args&) { return "cross_entropy"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

void add_cross_entropy_portable(select::Registry<CrossEntropyArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_cross_entropy_cpu(select::Registry<CrossEntropyArgs>& r))
void add_cross_entropy_cuda(select::Registry<CrossEntropyArgs>& r);

}  // namespace dew::ops
