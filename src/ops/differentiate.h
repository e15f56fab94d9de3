// How an op joins differentiation (docs/autodiff.md): after run_op computes its outputs, a
// node goes onto the tape when an input needs a gradient (grad mode on), and output tangents are
// computed when an input carries one. The op supplies the rules, written with ops:
//   static Differentiation differentiation(std::string_view op);
//   static std::vector<bool> vjp_reads_outputs(const Args&);   // which outputs the vjp needs
//   static VjpRule vjp(const Args&);     // captures what it needs of the inputs (SavedTensor)
//   static std::vector<Tensor> jvp(const Args&, const std::vector<Tensor>& outputs,
//                                  const std::vector<Tensor>& input_tangents);
#pragma once

#include <dew/autodiff.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/autograd.h"

namespace dew::ops {

enum class Differentiation : uint8_t {
  rules,               // vjp and jvp rules
  non_differentiable,  // the derivative is zero or undefined (comparisons, argmax, integer outputs)
  composite,           // differentiated through the ops it is made of
};

// d_inputs (one per Args::inputs(), undefined where none) from d_outputs and the outputs the rule
// asked for (as graph tensors of the node, so that gradients of gradients see them).
using VjpRule = detail::VjpFn;

using detail::SavedTensor;

// The rule declarations of an op type with rules (in its struct; defined in its rules.cc).
#define DEW_OP_RULES                                                                \
  static Differentiation differentiation(std::string_view op);                      \
  static std::vector<bool> vjp_reads_outputs(const Args& a);                        \
  static VjpRule vjp(const Args& a);                                                \
  static std::vector<Tensor> jvp(const Args& a, const std::vector<Tensor>& outputs, \
                                 const std::vector<Tensor>& input_tangents)

// Refuses an op without differentiation rules on inputs that need a derivative (never a silent zero).
void refuse_derivative_without_rules(std::string_view op, const std::vector<const Tensor*>& inputs);

// Whether any input carries a tangent at a visible jvp level.
inline bool has_tangents(const std::vector<const Tensor*>& inputs) {
  for (size_t depth = 0, levels = detail::visible_jvp_levels(); depth < levels; ++depth) {
    detail::OuterJvpLevels inside(depth);
    for (const Tensor* in : inputs)
      if (detail::tangent_of(*in).defined()) return true;
  }
  return false;
}

// Whether ops on any of these tensors would be differentiated: recorded onto the tape (grad mode on
// and a gradient could flow) or given a tangent (an enclosing jvp).
inline bool differentiated(const std::vector<const Tensor*>& tensors) {
  if (detail::grad_mode())
    for (const Tensor* t : tensors)
      if (detail::needs_grad(*t)) return true;
  return has_tangents(tensors);
}

// The outputs' tangents at the innermost visible jvp level, from the inputs' there, given to the
// outputs and returned (empty when no input has one there). The rule runs with that level hidden, so
// its ops carry the outer levels' tangents, not this one's.
template <class Op>
std::vector<Tensor> tangents_at_level(const typename Op::Args& args, const std::vector<const Tensor*>& inputs,
                                      std::vector<Tensor>& outs) {
  std::vector<Tensor> in_tangents(inputs.size());
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i)
    any = (in_tangents[i] = detail::tangent_of(*inputs[i])).defined() || any;
  if (!any) return {};
  std::vector<Tensor> out_tangents;
  {
    detail::OuterJvpLevels rule_scope;
    out_tangents = Op::jvp(args, outs, in_tangents);
  }
  for (size_t i = 0; i < outs.size() && i < out_tangents.size(); ++i)
    if (out_tangents[i].defined()) detail::set_tangent(outs[i], out_tangents[i]);
  return out_tangents;
}

// Records outs onto the tape and gives them tangents, as the inputs of args ask (see top).
template <class Op>
void differentiate(const typename Op::Args& args, std::vector<Tensor>& outs) {
  const std::vector<const Tensor*> inputs = args.inputs();
  if (!differentiated(inputs)) return;
  bool any_grad = false;
  if (detail::grad_mode())
    for (const Tensor* in : inputs) any_grad = any_grad || detail::needs_grad(*in);
  const std::string_view name = Op::name(args);
  const Differentiation how = Op::differentiation(name);
  if (how == Differentiation::non_differentiable) return;
  DEW_REQUIRE(how == Differentiation::rules,
              "[{}] is composite but ran as one op on a tensor that needs a derivative", name);
  std::shared_ptr<detail::GradNode> node;
  if (any_grad) {  // the node first: tangent computations below then see the outputs in the graph
    node = std::make_shared<detail::GradNode>();
    node->op = name;
    node->outputs = int(outs.size());
    node->inputs.reserve(inputs.size());
    for (const Tensor* in : inputs) node->inputs.push_back(detail::edge_of(*in));
    const std::vector<bool> reads = Op::vjp_reads_outputs(args);
    if (std::find(reads.begin(), reads.end(), true) != reads.end())
      for (size_t i = 0; i < outs.size(); ++i)
        node->saved_outputs.push_back(i < reads.size() && reads[i] ? SavedTensor(outs[i].detach(), name)
                                                                   : SavedTensor());
    node->vjp = Op::vjp(args);
    for (size_t i = 0; i < outs.size(); ++i)
      if (is_floating(outs[i].dtype())) detail::attach(outs[i], node, int(i));
  }
  // NOTE [nested jvp levels]: level by level, the outermost first, each seen as the innermost.
  for (size_t depth = detail::visible_jvp_levels(); depth-- > 0;) {
    detail::OuterJvpLevels inside(depth);
    const std::vector<Tensor> out_tangents = tangents_at_level<Op>(args, inputs, outs);
    if (depth == 0 && node && !out_tangents.empty()) {  // the tangents of the outputs the rule reads,
      node->tangent_level = detail::jvp_level();        // for a backward inside this jvp
      for (size_t i = 0; i < node->saved_outputs.size(); ++i)
        node->saved_output_tangents.push_back(node->saved_outputs[i].defined() && i < out_tangents.size()
                                                  ? out_tangents[i].detach()
                                                  : Tensor());
    }
  }
}

}  // namespace dew::ops
