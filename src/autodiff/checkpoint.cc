// checkpoint(f): one node on the tape in place of f's many. Its vjp runs f again with recording on,
// from detached copies of the inputs, and runs backward through that fresh graph.
#include <dew/autodiff.h>

#include "core/autograd.h"

namespace dew {

std::vector<Tensor> checkpoint(const TensorFn& f, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outs;
  {
    NoGrad untaped;  // f's activations die with this scope
    outs = f(inputs);
  }
  if (!grad_enabled()) return outs;
  auto node = std::make_shared<detail::GradNode>();
  node->op = "checkpoint";
  node->outputs = int(outs.size());
  std::vector<bool> needs(inputs.size());
  std::vector<detail::SavedTensor> saved;  // the inputs' data only: their graph stays with the edges
  for (size_t i = 0; i < inputs.size(); ++i) {
    node->inputs.push_back(detail::edge_of(inputs[i]));
    needs[i] = detail::needs_grad(inputs[i]);
    saved.emplace_back(inputs[i].detach(), "checkpoint");
  }
  node->vjp = [f, saved, needs](const std::vector<Tensor>& d, const std::vector<Tensor>&) {
    std::vector<Tensor> leaves;
    for (size_t i = 0; i < saved.size(); ++i) {
      Tensor leaf = saved[i].get().detach();  // refuses an input written in place since the forward
      if (needs[i]) leaf.requires_grad_();
      leaves.push_back(leaf);
    }
    std::vector<Tensor> recomputed;
    {
      EnableGrad recording;
      recomputed = f(leaves);
    }
    std::vector<Tensor> outs, cotangents;
    for (size_t i = 0; i < recomputed.size() && i < d.size(); ++i)
      if (d[i].defined() && detail::needs_grad(recomputed[i]))
        outs.push_back(recomputed[i]), cotangents.push_back(d[i]);
    if (!outs.empty()) backward(outs, cotangents);
    std::vector<Tensor> grads;
    for (const Tensor& leaf : leaves) grads.push_back(leaf.grad());
    return grads;
  };
  // Recorded even when no input needs a gradient: the parameters f reads may (known only by running it).
  for (size_t i = 0; i < outs.size(); ++i)
    if (is_floating(outs[i].dtype())) detail::attach(outs[i], node, int(i));
  return outs;
}

}  // namespace dew
