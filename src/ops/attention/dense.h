// Attention written with ops over materialized scores and probabilities, for derivatives that must
// themselves be differentiated. NOTE [attention's higher derivatives]: the first derivatives through
// attention are fused (attention_backward, attention_jvp: nothing T x S). When the derivative is itself
// differentiated — a gradient through a jvp (MeanFlow), the jvp of a gradient (Hessian-vector
// products), create_graph — or a gradient reaches lse, attention's rules compute it from the dense
// pieces below instead: ops whose own rules carry the next derivative. That costs (B,H,T,S) per piece,
// as a plain PyTorch attention does; the first-order paths stay fused.
#pragma once

#include <dew/ops.h>

#include <vector>

namespace dew::ops {

struct DenseAttention {
  int64_t group;  // query heads per KV head
  double scale, cap;
  Tensor qh, kh, vh;  // (B,H,T,D), (B,H,S,D), (B,H,S,D) in f32 (f64 for f64 q): KV heads repeated
  Tensor capped;      // tanh(raw / cap) (B,H,T,S) under softcap, else undefined
  Tensor probs;       // (B,H,T,S) exp(s - lse): zero for masked keys and for rows that see nothing
  Tensor sink_probs;  // (B,H,T,1) exp(sink - lse), when there are sinks
  Tensor alive;       // (B,1,T,1) or (B,H,T,1) bool: the row sees a key or a sink (else its lse is -inf)
  Tensor lse;         // (B,H,T,1)
  Tensor out;         // (B,H,T,D)
};

DenseAttention dense_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o);
// The same pieces around a given out and lse (attention_backward's and attention_jvp's inputs, taken as
// independent of q, k, v as those ops' references take them): probabilities from the given lse, rows
// whose lse is -inf dead.
DenseAttention dense_attention_at(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& o, const Tensor& out, const Tensor& lse);

// The tangents of attention's out (q's dtype) and lse, from the tangents of q, k, v and the sinks
// (undefined: zero).
std::vector<Tensor> dense_attention_jvp(const DenseAttention& a, const Tensor& tq, const Tensor& tk,
                                        const Tensor& tv, const Tensor& t_sinks, DType out_dtype,
                                        DType lse_dtype);

// dq, dk, dv (in their inputs' dtypes) and dsinks (when a.sink_probs is defined) from the gradients of
// out and lse (d_lse may be undefined).
std::vector<Tensor> dense_attention_vjp(const DenseAttention& a, const Tensor& d_out, const Tensor& d_lse,
                                        const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& sinks);

}  // namespace dew::ops
