// rope: rotary position embedding of x (B,T,H,D) at per-token positions (B,T) i64 (packed documents
// restart at 0), from cos and sin tables (P, R/2) built by rope_tables() in f64. The first R dims
// rotate, the rest pass through. Layouts: rotate_half pairs dim i with i + R/2 (Llama, GPT-NeoX);
// interleaved pairs 2i with 2i + 1 (GPT-J). Its vjp is rope with -sin (the inverse rotation).
#pragma once

#include "ops/op.h"

namespace dew::ops {

struct RopeArgs {
  Tensor x, positions, cos, sin;
  RopeLayout layout;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const { return {&x, &positions, &cos, &sin}; }
  std::vector<Tensor*> mutable_inputs() { return {&x, &positions, &cos, &sin}; }
};

struct Rope {
  DEW_OP_TYPE_MEMBERS(RopeArgs);
  static std::string_view name(const Args&) { return "rope"; }
  static std::string case_label(const Args& a);
  DEW_OP_RULES;
};

void add_rope_portable(select::Registry<RopeArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_rope_cpu(select::Registry<RopeArgs>& r))
void add_rope_cuda(select::Registry<RopeArgs>& r);

}  // namespace dew::ops
