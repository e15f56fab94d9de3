// Adaptive layer-norm's per-sample conditioning (DiT's adaLN), one family over tokens x (B,T,C) and
// per-sample vectors (B,C) broadcast over T:
//   modulate(x, shift, scale) = x (1 + scale) + shift
//   gated_add(residual, y, gate) = residual + gate y
// Each element is computed in the accumulator type and rounded once.
#pragma once

#include <dew/image_ops.h>

#include "ops/op.h"

namespace dew::ops {

enum class ModulateFn : uint8_t { modulate, gated_add };

struct ModulateArgs {
  Tensor x;     // modulate: x; gated_add: the residual (B,T,C)
  Tensor y;     // gated_add: the block's output (B,T,C)
  Tensor a, b;  // modulate: shift, scale; gated_add: gate (a), b unused — all (B,C)
  ModulateFn fn = ModulateFn::modulate;
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct Modulate {
  DEW_OP_TYPE_MEMBERS(ModulateArgs);
  static std::string_view name(const Args& a) {
    return a.fn == ModulateFn::modulate ? "modulate" : "gated_add";
  }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

void add_modulate_portable(select::Registry<ModulateArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_modulate_cpu(select::Registry<ModulateArgs>& r))

}  // namespace dew::ops
