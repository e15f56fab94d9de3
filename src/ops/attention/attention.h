// attention: q (B,T,H,D), k and v (B,S,Hkv,D), Hkv dividing H (grouped KV heads). Scores
// s = scale * q.k, optionally soft-capped (c * tanh(s / c)); masks from coordinates: causal (query t
// sits at key position t + S - T, bottom-right aligned as in flash-attention), a sliding window of W
// keys (t - W < j <= t), segment ids (a packed document attends only within itself); optional sinks,
// one learned logit per head that joins the softmax's denominator with no value.
// Outputs out (B,T,H,D) in q's dtype and lse (B,H,T) f32 (f64 for f64), -inf for a row that sees no key
// (its out is 0). attention_backward(dout, q, k, v, out, lse) -> dq, dk, dv (and dsinks).
// attention_jvp(q, k, v, tangents of q, k, v (and sinks), lse) -> the tangents of out and lse, one
// pass over the keys per query row, shifted by the saved lse: NOTE [attention tangent].
#pragma once

#include "ops/attention/paged.h"  // the paged decode member of the family (ops.def)
#include "ops/op.h"

namespace dew::ops {

struct AttentionArgs {
  Tensor q, k, v;
  AttentionOptions options;
  DType dtype() const { return q.dtype(); }
  Device device() const { return q.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct Attention {
  DEW_OP_TYPE_MEMBERS(AttentionArgs);
  static std::string_view name(const Args&) { return "attention"; }
  static std::string case_label(const Args& a);
  static double flops(const Args& a);  // 4 B H T S D, halved when causal
  DEW_OP_RULES;
};

struct AttentionBackwardArgs {
  Tensor dout, q, k, v, out, lse;
  AttentionOptions options;
  DType dtype() const { return q.dtype(); }
  Device device() const { return q.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct AttentionBackward {
  DEW_OP_TYPE_MEMBERS(AttentionBackwardArgs);
  static std::string_view name(const Args&) { return "attention_backward"; }
  static std::string case_label(const Args& a);
  static double flops(const Args& a);  // 2.5 x the forward's
  // Composite: on inputs that need a derivative, attention_backward() computes with the dense pieces
  // around the given out and lse (dense.h), whose ops carry the derivatives; the fused kernel runs only
  // where none is needed.
  static Differentiation differentiation(std::string_view) { return Differentiation::composite; }
};

// NOTE [attention tangent]: with p_j = exp(s_j - lse), the tangent of s_j is
// ds_j = scale (tq.k_j + q.tk_j) (times 1 - (s_j / cap)^2 under softcap); mu = sum_j p_j ds_j (+ p_sink
// t_sink) is the tangent of lse, and the tangent of out = sum_j p_j v_j is
// sum_j p_j (ds_j v_j + tv_j) - mu out. Recomputing p_j from the saved lse, each query row is one pass
// over its keys: nothing of size T x S exists, as in the forward. The kernels divide by their own
// sum l = sum_j p_j (+ p_sink) and accumulate their own out beside the tangent, so the saved lse only
// shifts the exponents: a forward that rounded its scores in another order (flash_gemm's GEMM tiles)
// would otherwise scale every p_j by exp(lse' - lse) against this pass's scores and miss the
// cancellation in sum_j p_j ds_j (v_j - out). So the op is the tangent of attention at q, k, v
// whatever lse holds, as long as it keeps the exponents in range (the forward's lse, or -inf for a row
// that sees no key).
struct AttentionJvpArgs {
  Tensor q, k, v, tq, tk, tv, lse;
  AttentionOptions options;
  Tensor t_sinks;  // the sinks' tangent, (H); required when options.sinks is given
  DType dtype() const { return q.dtype(); }
  Device device() const { return q.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct AttentionJvp {
  DEW_OP_TYPE_MEMBERS(AttentionJvpArgs);
  static std::string_view name(const Args&) { return "attention_jvp"; }
  static std::string case_label(const Args& a);
  static double flops(const Args& a);  // 1.5 x the forward's
  // Composite, as attention_backward.
  static Differentiation differentiation(std::string_view) { return Differentiation::composite; }
};

// Sizes and score constants of a call, shared by the kernels and the reference; offsets of the
// contiguous (B,T,H,D) and (B,S,Hkv,D) layouts.
struct AttentionGeometry {
  int64_t B, T, S, H, Hkv, D, group;
  double scale, cap;
  AttentionGeometry(const Tensor& q, const Tensor& k, const AttentionOptions& o);
  size_t q_at(int64_t b, int64_t t, int64_t h) const { return size_t(((b * T + t) * H + h) * D); }
  size_t k_at(int64_t b, int64_t j, int64_t hk) const { return size_t(((b * S + j) * Hkv + hk) * D); }
};

// Which keys query t of a row may see; shared by every implementation and the reference.
struct AttentionMask {
  int64_t T, S, window;
  bool causal;
  const int64_t* q_segments;  // (T) of this batch row, or null
  const int64_t* k_segments;  // (S)
  // [first, last) keys worth visiting for query t (before segment checks)
  std::pair<int64_t, int64_t> key_range(int64_t t) const {
    int64_t pos = t + S - T, lo = 0, hi = S;
    if (causal) hi = std::min(S, pos + 1);
    if (window > 0) lo = std::max<int64_t>(0, pos - window + 1);
    return {lo, std::max(lo, hi)};
  }
  bool visible(int64_t t, int64_t j) const {
    if (q_segments && q_segments[t] != k_segments[j]) return false;
    auto [lo, hi] = key_range(t);
    return j >= lo && j < hi;
  }
};
AttentionMask attention_mask(const AttentionOptions& o, int64_t T, int64_t S, int64_t b, const Tensor& q_seg,
                             const Tensor& k_seg);

void add_attention_portable(select::Registry<AttentionArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_attention_flash_gemm(select::Registry<AttentionArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_attention_backward_flash_gemm(select::Registry<AttentionBackwardArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_attention_cpu(select::Registry<AttentionArgs>& r))
void add_attention_backward_portable(select::Registry<AttentionBackwardArgs>& r);
void add_attention_jvp_portable(select::Registry<AttentionJvpArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_attention_jvp_cpu(select::Registry<AttentionJvpArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_attention_backward_cpu(select::Registry<AttentionBackwardArgs>& r))
void add_attention_cuda(select::Registry<AttentionArgs>& r);
void add_attention_backward_cuda(select::Registry<AttentionBackwardArgs>& r);
void add_attention_jvp_cuda(select::Registry<AttentionJvpArgs>& r);

}  // namespace dew::ops
