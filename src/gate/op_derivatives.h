// The derivative rows of the gate, generic over ops: for an op's case in float64, every floating input
// made a leaf, the vjp of output 0 (backward) and its jvp (jvp) against central differences of the op
// and against each other (derivative_check.h). Called through the catalog (OpEntry::derivatives).
#pragma once

#include <dew/autodiff.h>

#include <string>
#include <vector>

#include "gate/derivative_check.h"
#include "ops/op.h"

namespace dew::gate {

struct DerivativeReport {
  bool ran = false;
  std::string skipped;  // why not, when !ran
  bool jvp_ran = false;
  std::vector<std::string> failures;  // empty: passed
};

// Runs the op with args whose floating inputs are `values` (in mutable_inputs() order).
template <class Op>
Tensor first_output(typename Op::Args args, const std::vector<Tensor>& values) {
  size_t k = 0;
  for (Tensor* p : args.mutable_inputs())
    if (is_floating(p->dtype())) *p = values[k++];
  return ops::run_op<Op>(args)[0];
}

// After a refusal by a rule, narrows what is asked of it where the op refuses, by name, what its
// rules do not cover: gradients for inputs that are tables or weights (only the first input moves
// then), or forward mode. False when the refusal is of another kind (a real failure).
inline bool narrow_after_refusal(const std::string& message, std::vector<bool>& differentiable,
                                 bool& forward_mode) {
  if (message.find("detach()") != std::string::npos && differentiable.size() > 1 && differentiable[1]) {
    differentiable.assign(differentiable.size(), false);
    differentiable[0] = true;
    return true;
  }
  if (message.find("forward mode (jvp) is not written") != std::string::npos && forward_mode) {
    forward_mode = false;
    return true;
  }
  return false;
}

template <class Op>
DerivativeReport check_op_derivatives(const std::string& name, const ops::Case<typename Op::Args>& c,
                                      uint64_t seed) {
  DerivativeReport r;
  if (std::find(c.dtypes.begin(), c.dtypes.end(), DType::f64) == c.dtypes.end()) {
    r.skipped = "no f64 case";
    return r;
  }
  const ops::Differentiation how = Op::differentiation(name);
  if (how != ops::Differentiation::rules) {
    r.skipped = how == ops::Differentiation::non_differentiable ? "non-differentiable" : "composite";
    return r;
  }
  typename Op::Args args = c.make(DType::f64, RandomKey{seed, 0x0d1f, 0});
  if (Op::infer(args)[0].dtype != DType::f64) {
    r.skipped = "its output is not f64 (differences of a rounded output mean nothing)";
    return r;
  }
  // maximum and minimum of two independent draws, and max and min over a row (10^5 long in a case):
  // a near-tie inside the step is likely, and the difference quotient straddles the kink. Their vjp
  // and jvp are still held to each other (and tests/autodiff checks them against differences on draws
  // without ties).
  const bool differences = name != "maximum" && name != "minimum" && name != "max" && name != "min";
  std::vector<Tensor> inputs;
  for (Tensor* p : args.mutable_inputs())
    if (is_floating(p->dtype())) inputs.push_back(*p);
  if (inputs.empty()) {
    r.skipped = "no floating inputs";
    return r;
  }
  const testing::Fn f = [&](const std::vector<Tensor>& values) { return first_output<Op>(args, values); };
  // Retried narrower where the op refuses what its rules do not cover (narrow_after_refusal).
  std::vector<bool> differentiable(inputs.size(), true);
  bool forward_mode = true;
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      r.failures = testing::derivative_failures(name + "/" + c.name, f, inputs, differentiable, forward_mode,
                                                seed, differences);
      r.ran = true;
      r.jvp_ran = forward_mode;
      return r;
    } catch (const Error& e) {
      if (!narrow_after_refusal(e.what(), differentiable, forward_mode)) {
        r.ran = true;
        r.failures = {name + "/" + c.name + ": " + e.what()};
        return r;
      }
    }
  }
  return r;
}

}  // namespace dew::gate
