// The rule rows of the gate (issue 3): an op's vjp and jvp at the candidate's own precision, with the
// op's forward pinned to one implementation, judged against the same rules evaluated in float64 on
// portable implementations (the truth), with every op on its portable implementation at the
// candidate's dtype as the reference arm. A rule is a composition of ops, each gated itself, so the
// rows are judged by the RMS and worst-row ratios (no per-element bound of their own).
#pragma once

#include <dew/autodiff.h>
#include <dew/ops.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gate/gate.h"
#include "gate/op_derivatives.h"

namespace dew::gate {

// DEW_IMPL replaced for a scope, and restored to the environment's after.
struct ScopedImplOverrides {
  explicit ScopedImplOverrides(const std::string& spec) { set_impl_overrides(spec); }
  ~ScopedImplOverrides() {
    const char* env = std::getenv("DEW_IMPL");
    set_impl_overrides(env ? env : "");
  }
};

// "op:portable,..." for every op of the catalog (catalog.cc).
std::string portable_everywhere();

// Exclusions ("op:-impl,...") that put the implementation named `impl` first, where it exists, in every op
// of `op`'s folder (catalog.cc): the op and its derivative ops (attention_backward, attention_jvp).
// NOTE [derivatives on the candidate's family]
// An op's rules call its folder's derivative ops on the forward's saved results (attention's lse), and
// those recompute what the forward computed (the scores). Implementations that sum in different orders
// (a per-key dot with 16 lanes, oneDNN's blocked sgemm) disagree on the scores by rounding, and the
// derivatives then carry the forward's lse against scores it was not computed from: at D = 64 with sinks
// and segments, the RMS ratio of dv read 1.33-1.58 against the base, whose forward and derivatives
// are one implementation (the gate failed 4 of 60 seeds). So the candidate's derivatives run on its own
// family where the folder has it, and fall through to the selector's choice where it refuses.
// attention_jvp has no flash_gemm member; it normalizes by its own sum instead (NOTE [attention
// tangent]), so the forward's lse only shifts its exponents.
std::string candidate_first_in_folder(const std::string& op, const std::string& impl);

struct RuleDerivatives {
  std::vector<Tensor> values;  // the vjp of each differentiable input, then the jvp when it ran
};

// The vjp (cotangent w on output 0) and the jvp (tangents v) of the op at args, under `pins`.
template <class Op>
RuleDerivatives rule_derivatives(typename Op::Args args, const Tensor& w, const std::vector<Tensor>& v,
                                 const std::vector<bool>& differentiable, bool forward_mode,
                                 const std::string& pins) {
  ScopedImplOverrides scope(pins);
  std::vector<Tensor> leaves;
  for (Tensor* p : args.mutable_inputs())
    if (is_floating(p->dtype())) leaves.push_back(p->detach());
  for (size_t i = 0; i < leaves.size(); ++i)
    if (differentiable[i]) leaves[i].requires_grad_();
  RuleDerivatives out;
  backward({first_output<Op>(args, leaves)}, {w});
  for (size_t i = 0; i < leaves.size(); ++i)
    if (differentiable[i]) out.values.push_back(leaves[i].grad());
  if (!forward_mode) return out;
  std::vector<Tensor> primals, tangents;
  std::vector<size_t> moved;
  for (size_t i = 0; i < leaves.size(); ++i)
    if (differentiable[i])
      primals.push_back(leaves[i].detach()), tangents.push_back(v[i]), moved.push_back(i);
  const JvpResult j = jvp(
      [&](const std::vector<Tensor>& p) {
        std::vector<Tensor> all;
        for (const Tensor& l : leaves) all.push_back(l.detach());
        for (size_t k = 0; k < moved.size(); ++k) all[moved[k]] = p[k];
        return std::vector<Tensor>{first_output<Op>(args, all)};
      },
      primals, tangents);
  out.values.push_back(j.tangents[0]);
  return out;
}

template <class Op>
Report run_rule_gate(const std::string& op_name, const std::string& impl_name,
                     const ops::Case<typename Op::Args>& c, DType dtype, uint64_t seed) {
  using Args = typename Op::Args;
  Report report{op_name, impl_name, c.name, dtype, seed};
  if (Op::differentiation(op_name) != ops::Differentiation::rules) {
    report.refusal = "rules (the op has none of its own)";
    return report;
  }
  if (dtype == DType::f64) {
    report.refusal = "a dtype below f64 (f64 rules are held to central differences)";
    return report;
  }
  const auto* impl = Op::registry().find(impl_name);
  DEW_REQUIRE(impl, "[gate] {} has no implementation '{}'", op_name, impl_name);
  Args first = c.make(dtype, RandomKey{seed, 0x5e1e, 0});
  if (auto verdict = Op::registry().judge(*impl, first); !verdict.eligible) {
    report.refusal = verdict.requirement + " (" + verdict.reason + ")";
    return report;
  }
  if (!is_floating(Op::infer(first)[0].dtype)) {
    report.refusal = "a floating output";
    return report;
  }
  // The candidate takes every call of the rule it accepts, and only those: the implementations
  // registered before it are excluded, so the selector tries it first and falls through where it
  // refuses (a one-row GEMV's rule multiplies other shapes). A pin would refuse those calls.
  const std::string pin = candidate_first_in_folder(op_name, impl_name);
  const std::string portable = portable_everywhere();
  // What the op's rules cover, found as check_op_derivatives finds it (narrow_after_refusal).
  size_t inputs = 0;
  for (Tensor* p : first.mutable_inputs()) inputs += is_floating(p->dtype());
  std::vector<bool> differentiable(inputs, true);
  bool forward_mode = true;
  auto judge_draw = [&](Args draw, uint64_t stream) {
    const Tensor y = ops::run_op<Op>(draw)[0];
    Tensor w = Tensor::empty(y.shape(), y.dtype());
    fill_normal(w, {seed, stream, 1}, 0.0, 1.0);
    std::vector<Tensor> v;
    size_t k = 0;
    for (Tensor* p : draw.mutable_inputs()) {
      if (!is_floating(p->dtype())) continue;
      Tensor t = Tensor::empty(p->shape(), p->dtype());
      fill_normal(t, {seed, stream, 2 + k++}, 0.0, 1.0);
      v.push_back(t);
    }
    Args draw64 = draw;
    for (Tensor* p : draw64.mutable_inputs()) *p = upcast(*p);
    std::vector<Tensor> v64;
    for (const Tensor& t : v) v64.push_back(upcast(t));
    const RuleDerivatives cand = rule_derivatives<Op>(draw, w, v, differentiable, forward_mode, pin);
    const RuleDerivatives base = rule_derivatives<Op>(draw, w, v, differentiable, forward_mode, portable);
    // The truth's cotangent in its output's dtype (f64, but for ops whose output dtype is fixed, as cast's).
    const Tensor w64 = Tensor::from_values(w.to_f64_vector(), w.shape(), Op::infer(draw64)[0].dtype);
    const RuleDerivatives truth =
        rule_derivatives<Op>(draw64, w64, v64, differentiable, forward_mode, portable);
    std::vector<OutputReport> outs;
    for (size_t i = 0; i < cand.values.size(); ++i)
      outs.push_back(compare_output(cand.values[i], base.values[i], {truth.values[i], {}, 1}, dtype));
    return outs;
  };
  for (int attempt = 0;; ++attempt) {
    try {
      report.outputs = judge_draw(first, 0x5e1e0000);
      break;
    } catch (const Error& e) {
      if (attempt == 2 || !narrow_after_refusal(e.what(), differentiable, forward_mode)) throw;
    }
  }
  report.ran = true;
  report.case_name = c.name + (forward_mode ? " vjp+jvp" : " vjp");
  int64_t fewest = kPooledElements;
  for (const auto& o : report.outputs) fewest = std::min(fewest, std::max<int64_t>(o.elements(), 1));
  // A composition's errors are correlated along a row (one lse or row-sum error shifts the whole row)
  // and dominated by its largest terms, so a row group holds few independent samples per draw and one
  // ill-conditioned draw can double an arm's worst row. Rule rows pool over twice the forward gate's
  // minimum of draws, and a row that fails only by a ratio draws eight more at a time, up to
  // kMaxDraws: noise fades as draws accumulate, a systematically worse candidate does not.
  const int min_draws = 2 * kMinDraws;
  int draws = int(
      std::min<int64_t>(kMaxDraws, std::max<int64_t>(min_draws, (kPooledElements + fewest - 1) / fewest)));
  auto draw_more = [&](int from, int to, bool all_outputs) {
    for (int d = from; d < to; ++d) {
      auto more =
          judge_draw(c.make(dtype, RandomKey{seed, 0x5e1e + uint64_t(d) * 0x10000, 0}), 0x5e1e0000 + d);
      for (size_t i = 0; i < more.size(); ++i)
        if (all_outputs || d < min_draws || report.outputs[i].elements() < kPooledElements)
          report.outputs[i].merge(more[i]);
    }
  };
  draw_more(1, draws, false);
  auto fails_only_by_ratio = [&] {
    for (const auto& o : report.outputs)
      if (o.unwritten || o.outside_bound || o.integer_mismatch) return false;
    return !report.passed();
  };
  // The draws past `draws` go to every output, until the outputs that stopped pooling at min_draws (those
  // of kPooledElements or more) have had kMaxDraws: counting from `draws` instead never drew more where a
  // one-element output (logsumexp's jvp over all axes) had already set `draws` to kMaxDraws, and left its
  // vjp judged over min_draws (one draw's lse rounding made the RMS ratio 2.96; 0.85 over 64).
  for (int extra = 0; fails_only_by_ratio() && min_draws + extra < kMaxDraws;) {
    const int more = std::min(8, kMaxDraws - min_draws - extra);
    draw_more(draws + extra, draws + extra + more, true);
    extra += more;
  }
  return report;
}

}  // namespace dew::gate
