// short_conv: the causal depthwise convolution over time of Mamba-2's and Gated DeltaNet's layers
// (nn.Conv1d with groups = C, a kernel of W taps, W - 1 steps of left padding):
//   y[b,t,c] = bias[c] + sum_j weight[c,j] x[b, t - (W-1) + j, c]
// the inputs before t = 0 taken from `initial` (B, W-1, C) — the previous call's last W - 1 inputs,
// a decode cache — or zeros; with segment ids, a packed document's window starts at its first token
// (document_starts.h). Accumulated in f32 or wider; with `activation` silu, SiLU of the sum (these
// models' activation) before the one rounding.
#pragma once

#include <dew/recurrence_ops.h>

#include "ops/document_starts.h"
#include "ops/op.h"

namespace dew::ops {

struct ShortConvArgs {
  Tensor x;                                  // (B,T,C)
  Tensor weight;                             // (C,W)
  Tensor bias;                               // (C) or undefined
  Tensor initial;                            // (B,W-1,C) or undefined: zeros
  Tensor segments;                           // (B,T) i64 document ids, or undefined: one document per row
  Activation activation = Activation::none;  // none or silu
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct ShortConv {
  DEW_OP_TYPE_MEMBERS(ShortConvArgs);
  static std::string_view name(const Args&) { return "short_conv"; }
  static std::string case_label(const Args& a) {
    return std::string(dtype_name(a.dtype())) + (a.activation == Activation::silu ? " silu" : "");
  }
  DEW_OP_RULES;
};

void add_short_conv_portable(select::Registry<ShortConvArgs>& r);

// x sigmoid(x), the fused activation, in the accumulator's precision.
template <class Acc>
inline Acc short_conv_silu(Acc x) {
  return x / (Acc(1) + std::exp(-x));
}

// Whether input time s (< 0: from initial) reaches output t of a row whose document starts are
// `start` (document_start_of): in t's document, or before the row when t's document is the first.
inline bool short_conv_reaches(const std::vector<int64_t>& start, int64_t s, int64_t t) {
  return start.empty() || (s < 0 ? start[size_t(t)] == 0 : s >= start[size_t(t)]);
}

}  // namespace dew::ops
