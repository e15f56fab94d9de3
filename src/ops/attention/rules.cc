// attention's vjp through attention_backward (dq, dk, dv and the sinks' gradient), and its jvp
// through attention_jvp (NOTE [attention tangent]: one pass over the keys, nothing T x S). When that
// derivative will itself be differentiated, or a gradient reaches lse, both rules take the dense path
// instead (NOTE [attention's higher derivatives], dense.h).
#include "ops/attention/attention.h"
#include "ops/attention/dense.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation Attention::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Attention::vjp_reads_outputs(const Args&) {
  return {true, true};
}

VjpRule Attention::vjp(const Args& a) {
  const SavedTensor q(a.q, "attention"), k(a.k, "attention"), v(a.v, "attention");
  const SavedTensor q_segments(a.options.q_segments, "attention"),
      k_segments(a.options.k_segments, "attention"), sinks(a.options.sinks, "attention");
  AttentionOptions attributes = a.options;
  attributes.q_segments = attributes.k_segments = attributes.sinks = Tensor();
  const size_t inputs = a.inputs().size();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
    AttentionOptions o = attributes;
    o.q_segments = q_segments.get();
    o.k_segments = k_segments.get();
    o.sinks = sinks.get();
    const Tensor qq = q.get(), kk = k.get(), vv = v.get();
    std::vector<Tensor> g;
    if (d[1].defined() || differentiated({&d[0], &qq, &kk, &vv, &o.sinks})) {
      g = dense_attention_vjp(dense_attention(qq, kk, vv, o), d[0], d[1], qq, kk, vv, o.sinks);
    } else {
      g = run_op<AttentionBackward>(
          AttentionBackwardArgs{d[0], qq, kk, vv, outs[0].detach(), outs[1].detach(), o});
    }
    std::vector<Tensor> grads(inputs);
    grads[0] = g[0], grads[1] = g[1], grads[2] = g[2];
    if (o.sinks.defined()) grads[inputs - 1] = g[3];
    return grads;
  };
}

std::vector<Tensor> Attention::jvp(const Args& a, const std::vector<Tensor>& outs,
                                   const std::vector<Tensor>& t) {
  // Tangents in the inputs() order: q, k, v, the segments (integers), the sinks last; undefined is zero.
  auto given = [&](size_t i) { return i < t.size() ? t[i] : Tensor(); };
  const Tensor t_sinks = a.options.sinks.defined() ? given(t.size() - 1) : Tensor();
  const Tensor tq = given(0), tk = given(1), tv = given(2);
  if (differentiated({&a.q, &a.k, &a.v, &a.options.sinks, &tq, &tk, &tv, &t_sinks}))
    return dense_attention_jvp(dense_attention(a.q, a.k, a.v, a.options), tq, tk, tv, t_sinks,
                               outs[0].dtype(), outs[1].dtype());
  auto tangent = [&](const Tensor& given_tangent, const Tensor& like) {
    return given_tangent.defined() ? given_tangent : Tensor::zeros(like.shape(), like.dtype(), like.device());
  };
  Tensor sinks_tangent;
  if (a.options.sinks.defined()) sinks_tangent = tangent(t_sinks, a.options.sinks);
  std::vector<Tensor> r =
      run_op<AttentionJvp>(AttentionJvpArgs{a.q, a.k, a.v, tangent(tq, a.q), tangent(tk, a.k),
                                            tangent(tv, a.v), outs[1].detach(), a.options, sinks_tangent});
  return {r[0], r[1]};
}

}  // namespace dew::ops
