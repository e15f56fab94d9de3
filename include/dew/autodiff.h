// Differentiation, as JAX and PyTorch do it together (docs/autodiff.md): reverse mode through
// a tape that operations record onto, and forward mode through tangents carried beside values. Both
// run every op's rules, which are themselves ops, so the modes compose (a gradient through a jvp, the
// jvp of a gradient). Tensor::requires_grad_, grad() and detach() are in tensor.h.
#pragma once

#include <dew/tensor.h>

#include <functional>
#include <string_view>
#include <vector>

namespace dew {

// While one lives, operations on this thread record (on = true) or do not, and the previous mode
// returns after it (torch.set_grad_enabled).
class GradMode {
 public:
  explicit GradMode(bool on);
  ~GradMode();
  GradMode(const GradMode&) = delete;
  GradMode& operator=(const GradMode&) = delete;

 private:
  bool previous_;
};
struct NoGrad : GradMode {  // torch.no_grad
  NoGrad() : GradMode(false) {}
};
struct EnableGrad : GradMode {  // torch.enable_grad, e.g. inside NoGrad
  EnableGrad() : GradMode(true) {}
};
bool grad_enabled();

using TensorFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct BackwardOptions {
  bool retain_graph = false;  // keep the saved tensors, so that backward can run through it again
  bool create_graph = false;  // record the backward's own ops (gradients of gradients); retains the graph
};
// Accumulates d loss / d leaf into every leaf's grad(); loss must be a scalar.
void backward(const Tensor& loss, const BackwardOptions& options = {});
// The same from several outputs, each with its cotangent (same shape and dtype).
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& cotangents,
              const BackwardOptions& options = {});

// Runs `hook` during each backward() when the leaf's gradient for that backward is whole: every node
// of the graph with an edge to the leaf has run and its gradient is accumulated in grad() (torch's
// register_post_accumulate_grad_hook). A leaf the graph does not reach gets no call. One hook per
// `owner` (setting it again replaces it, an empty hook removes it); a leaf's hooks run in the order
// they were first set. Data parallelism starts each bucket's all-reduce from one while backward goes
// on, and parameter sharding frees a layer's gathered parameters from another.
void set_gradient_ready_hook(Tensor& leaf, std::function<void()> hook, const void* owner = nullptr);

// The gradients of the outputs (with their cotangents) with respect to `inputs`, returned instead of
// accumulated into leaves' grad() (torch.autograd.grad): inputs may be leaves or computed tensors that
// require a gradient; one no output depends on gets an undefined tensor. Only the part of the graph
// between the outputs and the inputs runs (and, without retain_graph or create_graph, is freed).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& cotangents, const BackwardOptions& options = {});

struct JvpResult {
  std::vector<Tensor> outputs, tangents;
};
// Runs f on the primals carrying the tangents; returns f's outputs and their tangents (jax.jvp).
JvpResult jvp(const TensorFn& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents);

// f(inputs) without keeping f's activations: the forward runs untaped, and backward runs f again
// to rebuild them (rematerialization, torch.utils.checkpoint). Gradients reach the inputs and the
// leaves f reads (its parameters), bit for bit as without it. f must be deterministic.
std::vector<Tensor> checkpoint(const TensorFn& f, const std::vector<Tensor>& inputs);

// f(x) with derivative rules of its own (torch.autograd.Function): `forward` runs untaped on x; backward
// hands the output's gradient to `vjp` for x's, forward mode x's tangent to `jvp` for the output's (one
// jvp level). Recorded only where x needs a gradient or carries a tangent. Tensor parallelism's
// collectives are these: a sum over ranks whose gradient is the identity, and the converse.
struct CustomFunction {
  std::string_view name;  // static storage: the tape's node name
  std::function<Tensor(const Tensor&)> forward, vjp, jvp;
};
Tensor custom_function(const Tensor& x, const CustomFunction& f);

// x, through an identity the tape records when x needs a gradient: `on_backward` runs when backward
// reaches it — after every use of x has sent its gradient, before anything x was computed from
// (FSDP's pre-backward hook; parameter sharding gathers the layer before x there). Tangents pass.
Tensor backward_hook(const Tensor& x, std::function<void()> on_backward);

// cast(t, dtype)'s place on the tape without its computation: a tensor of t's shape in `dtype` whose
// bytes are released (NOTE [released storage], tensor.h), for whoever holds the values to fill —
// parameter sharding broadcasts the owner's cast into it — and cast's gradient rule back to t.
Tensor deferred_cast(const Tensor& t, DType dtype);

}  // namespace dew
