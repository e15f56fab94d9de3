// The recurrence op family's public functions (docs/recurrence.md): the linear recurrence of the
// hybrid models' token mixers (GLA, Mamba-2's SSD, the delta rule, Gated DeltaNet, KDA) and their short
// causal convolution. Differentiable in both modes, like every op (ops.h).
#pragma once

#include <dew/activation.h>
#include <dew/tensor.h>

namespace dew {

// Causal depthwise convolution over time: x (B,T,C), weight (C,W) (nn.Conv1d's (C,1,W) without the
// middle axis), bias (C) or undefined, initial (B,W-1,C) the inputs before t = 0 (a decode cache: the
// previous call's last W - 1 inputs) or undefined for zeros -> (B,T,C). segments (B,T) i64, optional:
// packed documents, whose windows never reach back past their start (initial belongs to the first).
// activation: none, or silu applied to the sum (Mamba-2's and Gated DeltaNet's), rounded once.
Tensor short_conv(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Tensor& initial = {},
                  const Tensor& segments = {}, Activation activation = Activation::none);

struct RecurrenceOptions {
  double scale = 0;  // out_t = scale * S_t^T q_t; 0: 1/sqrt(K)
  Tensor segments;   // (B,T) integer document ids of packed rows, or undefined: the state restarts where
                     // the id changes (no decay, no state crosses a document start)
};
struct RecurrenceResult {
  Tensor out;    // (B,T,H,V) in q's dtype
  Tensor state;  // (B,H,K,V) the state after the last token: f32 (f64 for f64 inputs)
};
// The linear recurrence over a state S (K x V per head), one step per token t:
//   S~ = exp(gate_t) * S_{t-1}                        (decay of each key row; none without a gate)
//   S_t = S~ + k_t v_t^T                              (additive: GLA, SSD, linear attention)
//   S_t = S~ + k_t (beta_t (v_t - S~^T k_t))^T        (the delta rule, when beta is given)
//   out_t = scale * S_t^T q_t
// q, k (B,T,H,K); v (B,T,H,V); gate undefined, (B,T,H) one log-decay per head (SSD, Gated DeltaNet)
// or (B,T,H,K) one per key (GLA, KDA); beta undefined or (B,T,H); initial (B,H,K,V) in the state's
// dtype, or undefined for zeros. One token with the previous call's state is the decode step.
RecurrenceResult linear_recurrence(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& gate = {},
                                   const Tensor& beta = {}, const Tensor& initial = {},
                                   const RecurrenceOptions& options = {});

}  // namespace dew
