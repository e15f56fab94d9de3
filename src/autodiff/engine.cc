// Reverse mode: walks the tape from the outputs to the leaves, running each node's vjp once all the
// gradients flowing into it have arrived, and frees what it saved; forward mode's jvp() scope. No op
// appears here: nodes carry their rules (ops/differentiate.h), views their geometry (view_rules.cc).
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <algorithm>

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/view_rules.h"
#include "core/autograd.h"

namespace dew {
namespace {

using detail::GradEdge;
using detail::GradNode;

// g accumulated into slot (the first gradient is kept as is: no copy, no zeros).
void accumulate(Tensor& slot, const Tensor& g) {
  slot = slot.defined() ? add(slot, g) : g;
}
// A leaf's .grad: contiguous, whatever view the last rule produced.
void accumulate_leaf(Tensor& grad, const Tensor& g) {
  accumulate(grad, g);
  grad = grad.contiguous();
}

// The node's outputs the rule asked for, as graph tensors of the node with the tangents they had.
std::vector<Tensor> saved_outputs(const std::shared_ptr<GradNode>& node) {
  std::vector<Tensor> outs(node->saved_outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!node->saved_outputs[i].defined()) continue;
    outs[i] = node->saved_outputs[i].get().detach();  // refuses an output written in place since
    detail::attach(outs[i], node, int(i));
    if (i < node->saved_output_tangents.size() && node->saved_output_tangents[i].defined() &&
        node->tangent_level == detail::jvp_level())
      detail::set_tangent(outs[i], node->saved_output_tangents[i]);
  }
  return outs;
}

// The order to run nodes in: each after every node that feeds it a gradient (reverse topological).
std::vector<std::shared_ptr<GradNode>> nodes_in_order(const std::vector<std::shared_ptr<GradNode>>& roots) {
  std::vector<std::shared_ptr<GradNode>> order;
  std::unordered_set<GradNode*> seen;
  struct Frame {
    std::shared_ptr<GradNode> node;
    size_t next = 0;
  };
  for (const auto& root : roots) {
    if (!seen.insert(root.get()).second) continue;
    std::vector<Frame> stack{{root}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.node->inputs.size()) {
        const std::shared_ptr<GradNode>& child = f.node->inputs[f.next++].node;
        if (child && seen.insert(child.get()).second) stack.push_back({child});
        continue;
      }
      order.push_back(f.node);
      stack.pop_back();
    }
  }
  return {order.rbegin(), order.rend()};  // post-order reversed: consumers before producers
}

}  // namespace

void backward(const Tensor& loss, const BackwardOptions& options) {
  DEW_REQUIRE(
      loss.defined() && loss.numel() == 1,
      "[backward] the loss is {}; expected a scalar, or pass cotangents: backward(outputs, cotangents)",
      loss.defined() ? loss.describe() : "undefined");
  backward({loss}, {Tensor::full(loss.shape(), 1.0, loss.dtype(), loss.device())}, options);
}

namespace {

// The inputs grad() differentiates with respect to: where their gradients collect instead of in
// leaves' .grad. The walk runs only the nodes through which a gradient reaches one of them (nothing
// else of the graph — an enclosing computation's — is run or freed).
struct Targets {
  std::vector<GradEdge> edges;
  std::vector<Tensor> grads;
  std::unordered_set<const GradNode*> runs;  // nodes whose vjp leads to a target

  bool is_leaf_target(const GradEdge& edge, size_t& index) const {
    const std::shared_ptr<detail::AutogradMeta> leaf = edge.leaf.lock();
    for (size_t i = 0; i < edges.size(); ++i)
      if (!edges[i].node && leaf && edges[i].leaf.lock() == leaf) return index = i, true;
    return false;
  }
  bool produces_target(const GradNode* node) const {
    for (const GradEdge& t : edges)
      if (t.node.get() == node) return true;
    return false;
  }
  // Marks, over `order` (consumers before producers), the nodes from which a target is reachable
  // through their inputs; returns the nodes to visit: those and the producers of targets.
  std::vector<std::shared_ptr<GradNode>> plan(const std::vector<std::shared_ptr<GradNode>>& order) {
    for (auto it = order.rbegin(); it != order.rend(); ++it) {  // producers before consumers
      const GradNode* node = it->get();
      for (const GradEdge& edge : node->inputs) {
        size_t index;
        if ((edge.node && (runs.count(edge.node.get()) || produces_target(edge.node.get()))) ||
            (!edge.node && is_leaf_target(edge, index))) {
          runs.insert(node);
          break;
        }
      }
    }
    std::vector<std::shared_ptr<GradNode>> visit;
    for (const auto& node : order)
      if (runs.count(node.get()) || produces_target(node.get())) visit.push_back(node);
    return visit;
  }
};

// backward's walk; with `targets`, gradients collect there instead of in leaves.
void run_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& cotangents,
                  const BackwardOptions& options, Targets* targets) {
  DEW_REQUIRE(outputs.size() == cotangents.size(),
              "[backward] {} outputs and {} cotangents; expected one each", outputs.size(),
              cotangents.size());
  std::unordered_map<GradNode*, std::vector<Tensor>> grads;  // gradients arriving at each node's outputs
  std::vector<std::shared_ptr<GradNode>> roots;
  const auto deliver = [&](const GradEdge& edge, const Tensor& g) {
    if (!edge.node) {
      size_t index;
      if (!targets) {
        if (auto leaf = edge.leaf.lock()) accumulate_leaf(leaf->grad, g);
      } else if (targets->is_leaf_target(edge, index)) {
        accumulate(targets->grads[index], g);
      }
      return;
    }
    auto& slot = grads[edge.node.get()];
    slot.resize(size_t(edge.node->outputs));
    accumulate(slot[size_t(edge.output)], g);
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    const Tensor& cot = cotangents[i];
    DEW_REQUIRE(
        detail::needs_grad(out),
        "[backward] output {} ({}) does not require a gradient: no leaf it depends on requires one, or "
        "it was computed under NoGrad",
        i, out.describe());
    DEW_REQUIRE(cot.defined() && cot.shape() == out.shape() && cot.dtype() == out.dtype(),
                "[backward] cotangent {} is {}; expected {} like its output", i,
                cot.defined() ? cot.describe() : "undefined", out.describe());
    const GradEdge edge = detail::edge_of(out);
    deliver(edge, cot);
    if (edge.node) roots.push_back(edge.node);
  }
  std::optional<NoGrad> no_grad;
  if (!options.create_graph) no_grad.emplace();
  // A recorded backward reads the forward's nodes again when it is differentiated: keep them (PyTorch).
  const bool retain = options.retain_graph || options.create_graph;
  std::vector<std::shared_ptr<GradNode>> order = nodes_in_order(roots);
  if (targets) order = targets->plan(order);
  // Leaves with a gradient-ready hook: how many edges of the walk's nodes still lead to each. Each node
  // settles its edges once it has run (or been passed over), and a leaf whose count reaches 0 is whole.
  std::unordered_map<detail::AutogradMeta*, int> pending;
  if (!targets)
    for (const std::shared_ptr<GradNode>& node : order)
      for (const GradEdge& edge : node->inputs)
        if (const auto leaf = edge.node ? nullptr : edge.leaf.lock();
            leaf && !leaf->on_gradient_ready.empty())
          ++pending[leaf.get()];
  const auto settle = [&](const GradNode& node) {
    if (pending.empty()) return;
    for (const GradEdge& edge : node.inputs)
      if (const auto leaf = edge.node ? nullptr : edge.leaf.lock();
          leaf && !leaf->on_gradient_ready.empty()) {
        const auto it = pending.find(leaf.get());
        if (it != pending.end() && --it->second == 0)
          for (const auto& [owner, hook] : leaf->on_gradient_ready) hook();
      }
  };
  for (const std::shared_ptr<GradNode>& node : order) {
    auto found = grads.find(node.get());
    if (found == grads.end()) {  // no gradient reached it
      settle(*node);
      continue;
    }
    std::vector<Tensor> d_outputs = std::move(found->second);
    grads.erase(found);
    if (targets) {  // every consumer has run: the gradients of this node's target outputs are whole
      for (size_t t = 0; t < targets->edges.size(); ++t)
        if (targets->edges[t].node == node && size_t(targets->edges[t].output) < d_outputs.size() &&
            d_outputs[size_t(targets->edges[t].output)].defined())
          accumulate(targets->grads[t], d_outputs[size_t(targets->edges[t].output)]);
      if (!targets->runs.count(node.get())) continue;
    }
    DEW_REQUIRE(!node->released,
                "[backward] the graph through {} was already run and freed; pass retain_graph = true to the "
                "first backward to run it twice",
                node->op);
    d_outputs.resize(size_t(node->outputs));  // undefined where no gradient arrived (a zero)
    std::vector<Tensor> d_inputs = node->view ? autodiff::view_vjp(*node->view, d_outputs[0])
                                              : node->vjp(d_outputs, saved_outputs(node));
    DEW_REQUIRE(d_inputs.size() == node->inputs.size(), "[{}] its vjp gave {} gradients for {} inputs",
                node->op, d_inputs.size(), node->inputs.size());
    for (size_t i = 0; i < d_inputs.size(); ++i)
      if (node->inputs[i].live() && d_inputs[i].defined()) deliver(node->inputs[i], d_inputs[i]);
    settle(*node);
    if (!retain) {  // each saved tensor freed as soon as its rule has run
      node->vjp = nullptr;
      node->saved_outputs.clear();
      node->saved_output_tangents.clear();
      node->released = true;
    }
  }
}

}  // namespace

void set_gradient_ready_hook(Tensor& leaf, std::function<void()> hook, const void* owner) {
  DEW_REQUIRE(leaf.requires_grad() && !detail::TensorAutograd::of(leaf)->node,
              "[set_gradient_ready_hook] {}; expected a leaf that requires a gradient", leaf.describe());
  auto& hooks = detail::TensorAutograd::of(leaf)->on_gradient_ready;
  const auto mine = std::find_if(hooks.begin(), hooks.end(), [&](const auto& h) { return h.first == owner; });
  if (!hook) {
    if (mine != hooks.end()) hooks.erase(mine);
  } else if (mine != hooks.end()) {
    mine->second = std::move(hook);
  } else {
    hooks.emplace_back(owner, std::move(hook));
  }
}

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& cotangents,
              const BackwardOptions& options) {
  run_backward(outputs, cotangents, options, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& cotangents, const BackwardOptions& options) {
  Targets targets;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DEW_REQUIRE(
        inputs[i].defined() && detail::needs_grad(inputs[i]),
        "[grad] input {} ({}) does not require a gradient; expected a tensor the outputs were computed "
        "from while recording",
        i, inputs[i].defined() ? inputs[i].describe() : "undefined");
    targets.edges.push_back(detail::edge_of(inputs[i]));
  }
  targets.grads.resize(inputs.size());
  run_backward(outputs, cotangents, options, &targets);
  return std::move(targets.grads);
}

JvpResult jvp(const TensorFn& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents) {
  DEW_REQUIRE(primals.size() == tangents.size(), "[jvp] {} primals and {} tangents; expected one each",
              primals.size(), tangents.size());
  const int level = detail::push_jvp_level();
  JvpResult result;
  try {
    std::vector<Tensor> duals;
    for (size_t i = 0; i < primals.size(); ++i) {
      const Tensor& p = primals[i];
      const Tensor& t = tangents[i];
      DEW_REQUIRE(t.defined() && t.shape() == p.shape() && t.dtype() == p.dtype(),
                  "[jvp] tangent {} is {}; expected {} like its primal", i,
                  t.defined() ? t.describe() : "undefined", p.describe());
      // A new tensor (an identity permute, so gradients still reach p) carrying the tangent at this level.
      std::vector<int64_t> identity(static_cast<size_t>(p.dim()));
      for (size_t d = 0; d < identity.size(); ++d) identity[d] = int64_t(d);
      Tensor dual = p.permute(identity);
      detail::set_tangent(dual, t);
      duals.push_back(dual);
    }
    result.outputs = f(duals);
    for (const Tensor& out : result.outputs) {
      Tensor t = detail::tangent_of(out);
      result.tangents.push_back(t.defined() ? t : Tensor::zeros(out.shape(), out.dtype(), out.device()));
    }
  } catch (...) {
    detail::pop_jvp_level(level);
    throw;
  }
  detail::pop_jvp_level(level);
  return result;
}

}  // namespace dew
