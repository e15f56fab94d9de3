// The gated units: vjp through their fused backward ops, jvp too (y' = act'(g) g' u + act(g) u',
// which is the backward op's d_gate with dy = g' plus its d_up with dy = u'). The backward ops' own
// rules are not written yet: they refuse a derivative (gradients of gradients through a GLU).
#include "ops/glu/glu.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

std::vector<Tensor> glu_backward(const GluArgs& forward, const Tensor& dy, const Tensor& gate,
                                 const Tensor& up) {
  return run_op<Glu>(GluArgs{dy, gate, up, forward.activation, true});
}

}  // namespace

Differentiation Glu::differentiation(std::string_view op) {
  return op.ends_with("_backward") ? Differentiation::no_rules_yet : Differentiation::rules;
}

std::vector<bool> Glu::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Glu::vjp(const Args& a) {
  const SavedTensor gate(a.gate, name(a)), up(a.up, name(a));
  const GluArgs attributes{Tensor(), Tensor(), Tensor(), a.activation, false};
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    return glu_backward(attributes, d[0], gate.get(), up.get());
  };
}

std::vector<Tensor> Glu::jvp(const Args& a, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  Tensor dy;
  if (t[0].defined()) dy = glu_backward(a, t[0], a.gate, a.up)[0];
  if (t[1].defined()) dy = add_defined(dy, glu_backward(a, t[1], a.gate, a.up)[1]);
  return {dy};
}

}  // namespace dew::ops
