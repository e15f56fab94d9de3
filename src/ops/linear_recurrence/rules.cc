// linear_recurrence's vjp through linear_recurrence_backward (the reverse sweep, NOTE [recurrence
// reverse sweep]) and its jvp through linear_recurrence_jvp (the tangent recurrence beside the state).
// Neither derivative op is differentiated again: second derivatives of a recurrence are refused by name.
#include "ops/linear_recurrence/linear_recurrence.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation LinearRecurrence::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> LinearRecurrence::vjp_reads_outputs(const Args&) {
  return {false, false};
}

VjpRule LinearRecurrence::vjp(const Args& a) {
  const char* op = "linear_recurrence";
  const SavedTensor q(a.q, op), k(a.k, op), v(a.v, op), gate(a.gate, op), beta(a.beta, op),
      initial(a.initial, op), segments(a.options.segments, op);
  const double scale = a.options.scale;
  const size_t inputs = a.inputs().size();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    LinearRecurrenceArgs f{
        q.get(), k.get(), v.get(), gate.get(), beta.get(), initial.get(), {scale, segments.get()}};
    const Tensor d_out = d[0].defined() ? d[0] : Tensor::zeros(f.v.shape(), f.v.dtype(), f.v.device());
    const std::vector<Tensor> g =
        run_op<LinearRecurrenceBackward>(LinearRecurrenceBackwardArgs{d_out, d[1], f});
    std::vector<Tensor> grads(inputs);  // q, k, v, then gate, beta, initial where given; segments none
    const std::vector<const Tensor*> in = f.inputs();
    size_t next = 0;
    for (size_t i = 0; i < in.size(); ++i)
      if (is_floating(in[i]->dtype())) grads[i] = g[next++];
    return grads;
  };
}

std::vector<Tensor> LinearRecurrence::jvp(const Args& a, const std::vector<Tensor>&,
                                          const std::vector<Tensor>& t) {
  // t follows inputs(): q, k, v, then gate, beta, initial where given; an undefined tangent is zero.
  size_t at = 0;
  const auto tangent_of = [&](const Tensor& primal) {
    if (!primal.defined()) return Tensor();
    const Tensor given = at < t.size() ? t[at] : Tensor();
    ++at;
    return given.defined() ? given : Tensor::zeros(primal.shape(), primal.dtype(), primal.device());
  };
  LinearRecurrenceJvpArgs j;
  j.forward = a;
  j.tq = tangent_of(a.q), j.tk = tangent_of(a.k), j.tv = tangent_of(a.v);
  j.t_gate = tangent_of(a.gate), j.t_beta = tangent_of(a.beta), j.t_initial = tangent_of(a.initial);
  return run_op<LinearRecurrenceJvp>(j);
}

}  // namespace dew::ops
