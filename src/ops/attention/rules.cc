// attention's vjp through attention_backward (dq, dk, dv and the sinks' gradient), and its jvp
// through attention_jvp (NOTE [attention tangent]: one pass over the keys, nothing T x S). Not written
// yet, and refused rather than approximated: a gradient reaching the lse output.
#include "ops/attention/attention.h"
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
    DEW_REQUIRE(!d[1].defined(),
                "[attention] a gradient reached its lse output; that derivative is not written yet");
    AttentionOptions o = attributes;
    o.q_segments = q_segments.get();
    o.k_segments = k_segments.get();
    o.sinks = sinks.get();
    std::vector<Tensor> g = run_op<AttentionBackward>(
        AttentionBackwardArgs{d[0], q.get(), k.get(), v.get(), outs[0].detach(), outs[1].detach(), o});
    std::vector<Tensor> grads(inputs);
    grads[0] = g[0], grads[1] = g[1], grads[2] = g[2];
    if (o.sinks.defined()) grads[inputs - 1] = g[3];
    return grads;
  };
}

std::vector<Tensor> Attention::jvp(const Args& a, const std::vector<Tensor>& outs,
                                   const std::vector<Tensor>& t) {
  // Tangents in the inputs() order: q, k, v, the segments (integers), the sinks last; undefined is zero.
  auto tangent = [&](size_t i, const Tensor& like) {
    return i < t.size() && t[i].defined() ? t[i] : Tensor::zeros(like.shape(), like.dtype());
  };
  Tensor t_sinks;
  if (a.options.sinks.defined()) t_sinks = tangent(t.size() - 1, a.options.sinks);
  std::vector<Tensor> r =
      run_op<AttentionJvp>(AttentionJvpArgs{a.q, a.k, a.v, tangent(0, a.q), tangent(1, a.k), tangent(2, a.v),
                                            outs[0].detach(), outs[1].detach(), a.options, t_sinks});
  return {r[0], r[1]};
}

}  // namespace dew::ops
