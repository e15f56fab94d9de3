// attention's vjp through attention_backward (dq, dk, dv and the sinks' gradient). Not written yet,
// and refused rather than approximated: a gradient reaching the lse output, and forward mode, whose
// fused tangent recurrence (the flash-style jvp) is still to come; a jvp composed of ops would
// materialize the T x S scores the forward never does.
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

std::vector<Tensor> Attention::jvp(const Args&, const std::vector<Tensor>&, const std::vector<Tensor>&) {
  fail("[attention] forward mode (jvp) is not written yet: its fused tangent recurrence is still to come");
}

}  // namespace dew::ops
