// linear_recurrence: the state-space recurrence of the hybrid models' token mixers, one template for
// its parameterizations (recurrence_ops.h has the equations): no gate, a decay per head or per key,
// additive or delta-rule updates, an initial state in and the final state out, document resets.
// The state accumulates in f32 (f64 for f64 inputs) whatever the inputs' dtype; out is rounded once.
// linear_recurrence_backward(d_out, d_state, forward) -> the gradients of every input given;
// linear_recurrence_jvp(forward, tangents) -> the tangents of out and the final state.
#pragma once

#include <dew/recurrence_ops.h>

#include "ops/document_starts.h"
#include "ops/op.h"

namespace dew::ops {

// The dtype of the state (initial and final): the inputs' accumulator.
DType recurrence_state_dtype(DType input);

struct LinearRecurrenceArgs {
  Tensor q, k, v;  // (B,T,H,K), (B,T,H,K), (B,T,H,V)
  Tensor gate;     // undefined, (B,T,H) or (B,T,H,K): log decays
  Tensor beta;     // undefined (additive) or (B,T,H) (delta rule)
  Tensor initial;  // undefined (zeros) or (B,H,K,V) in recurrence_state_dtype
  RecurrenceOptions options;
  DType dtype() const { return q.dtype(); }
  Device device() const { return q.device(); }
  std::vector<const Tensor*> inputs() const;  // q, k, v, then gate, beta, initial, segments where given
  std::vector<Tensor*> mutable_inputs();
  bool per_key_gate() const { return gate.defined() && gate.dim() == 4; }
};

struct LinearRecurrence {
  DEW_OP_TYPE_MEMBERS(LinearRecurrenceArgs);
  static std::string_view name(const Args&) { return "linear_recurrence"; }
  static std::string case_label(const Args& a);
  static double flops(const Args& a);
  DEW_OP_RULES;
};

struct LinearRecurrenceBackwardArgs {
  Tensor d_out;    // (B,T,H,V) in q's dtype
  Tensor d_state;  // (B,H,K,V) in the state's dtype, or undefined (zero)
  LinearRecurrenceArgs forward;
  DType dtype() const { return forward.dtype(); }
  Device device() const { return forward.device(); }
  std::vector<const Tensor*> inputs() const;  // d_out, d_state where given, then the forward's
  std::vector<Tensor*> mutable_inputs();
};

// Outputs: dq, dk, dv, then d_gate, d_beta and d_initial where the forward has them.
struct LinearRecurrenceBackward {
  DEW_OP_TYPE_MEMBERS(LinearRecurrenceBackwardArgs);
  static std::string_view name(const Args&) { return "linear_recurrence_backward"; }
  static std::string case_label(const Args& a) { return LinearRecurrence::case_label(a.forward); }
  static double flops(const Args& a) { return 2 * LinearRecurrence::flops(a.forward); }
  // Its own derivatives (second derivatives of the recurrence) are not built: on inputs that need one,
  // the call is refused by name (differentiate.h) rather than differentiated wrongly.
  static Differentiation differentiation(std::string_view) { return Differentiation::composite; }
};

struct LinearRecurrenceJvpArgs {
  LinearRecurrenceArgs forward;
  // The tangent of each floating input the forward has (q, k, v, gate, beta, initial), same shapes.
  Tensor tq, tk, tv, t_gate, t_beta, t_initial;
  DType dtype() const { return forward.dtype(); }
  Device device() const { return forward.device(); }
  std::vector<const Tensor*> inputs() const;  // the forward's, then the tangents given
  std::vector<Tensor*> mutable_inputs();
};

// Outputs: the tangents of out and of the final state.
struct LinearRecurrenceJvp {
  DEW_OP_TYPE_MEMBERS(LinearRecurrenceJvpArgs);
  static std::string_view name(const Args&) { return "linear_recurrence_jvp"; }
  static std::string case_label(const Args& a) { return LinearRecurrence::case_label(a.forward); }
  static double flops(const Args& a) { return 2 * LinearRecurrence::flops(a.forward); }
  static Differentiation differentiation(std::string_view) { return Differentiation::composite; }
};

void add_linear_recurrence_portable(select::Registry<LinearRecurrenceArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_linear_recurrence_cpu(select::Registry<LinearRecurrenceArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_linear_recurrence_token_by_token(select::Registry<LinearRecurrenceArgs>& r))
DEW_DECLARE_CPU_TIERS(
    void add_linear_recurrence_backward_cpu(select::Registry<LinearRecurrenceBackwardArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_linear_recurrence_jvp_cpu(select::Registry<LinearRecurrenceJvpArgs>& r))
void add_linear_recurrence_backward_portable(select::Registry<LinearRecurrenceBackwardArgs>& r);
void add_linear_recurrence_jvp_portable(select::Registry<LinearRecurrenceJvpArgs>& r);

}  // namespace dew::ops
