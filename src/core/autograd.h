// The differentiation state tensors carry (docs/autodiff.md): whether a leaf requires a
// gradient, its accumulated gradient, the recorded op that produced a tensor, and a forward-mode
// tangent. Ops record in run_op (ops/op.h); src/autodiff/ walks the records. Nothing here knows an op.
#pragma once

#include <dew/autodiff.h>
#include <dew/tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dew::detail {

struct GradNode;

// Where the gradient of one op input goes: into the node that produced it (which of its outputs), or
// into a leaf's .grad; nowhere when the input needs no gradient.
struct GradEdge {
  std::shared_ptr<GradNode> node;
  int output = 0;
  // Weak: with create_graph a leaf's .grad holds a graph that reaches back to the leaf; a strong edge
  // would make that a cycle (PyTorch's documented leak). A leaf nobody holds needs no gradient.
  std::weak_ptr<AutogradMeta> leaf;
  bool live() const { return node || !leaf.expired(); }
};

// Gradients of an op's inputs (one per edge; undefined where none) from the gradients of its outputs
// (one per output; undefined, meaning zero, where none arrived; a single output always has one) and
// the outputs the rule kept. Written with ops, so it can itself be recorded.
using VjpFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& d_outputs,
                                                const std::vector<Tensor>& outputs)>;

// A view (Tensor::slice, permute, ...) recorded as data: core cannot call ops, so the engine
// (src/autodiff/) writes the view's vjp with them. Views' tangents are the same view of the tangent.
struct ViewSpec {
  enum class Kind : uint8_t { slice, select, permute, reshape, expand, unsqueeze, copy, to_device } kind;
  Shape base_shape;
  std::vector<int64_t> params;  // slice: dim, start, end, step; select: dim, index; permute: order;
                                // unsqueeze: dim; to_device: the source's kind, index
};

// A tensor a rule keeps for backward, with its storage's version: get() refuses once the data was
// written in place since (as PyTorch's saved tensors do), naming the op.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, std::string_view op) : t_(t), version_(t.version()), op_(op) {}
  const Tensor& get() const {
    DEW_REQUIRE(
        !t_.defined() || t_.version() == version_,
        "[{}] a tensor saved for the gradient ({}) was modified in place after the op ran (version {} "
        "-> {}); clone it before writing, or write before the op",
        op_, t_.describe(), version_, t_.version());
    return t_;
  }
  bool defined() const { return t_.defined(); }

 private:
  Tensor t_;
  uint64_t version_ = 0;
  std::string_view op_;  // static storage (Op::name)
};

struct GradNode {
  std::string_view op;  // the op's name: static storage (Op::name)
  std::vector<GradEdge> inputs;
  int outputs = 1;
  VjpFn vjp;  // owns the inputs the rule saved; dropped once it has run, unless the graph is retained
  std::unique_ptr<ViewSpec> view;  // set instead of vjp for views
  // The outputs the rule reads, kept outside the graph (an output holding its own node would be a
  // cycle); the engine hands them to the rule re-attached to this node, with the tangents they had.
  std::vector<SavedTensor> saved_outputs;
  std::vector<Tensor> saved_output_tangents;
  int tangent_level = 0;
  bool released = false;
};

struct AutogradMeta {
  bool requires_grad = false;      // a leaf the user marked
  Tensor grad;                     // leaves: the accumulated gradient
  std::shared_ptr<GradNode> node;  // the recorded op that produced this tensor
  int output = 0;                  // which of node's outputs
  // Forward mode: the tangent at each open jvp level that gave one (NOTE [nested jvp levels]).
  std::vector<std::pair<int, Tensor>> tangents;
  // Leaves: set_gradient_ready_hook (autodiff.h), one per owner, run in the order they were set.
  std::vector<std::pair<const void*, std::function<void()>>> on_gradient_ready;
};

// Tensor's autograd field, for the functions below.
struct TensorAutograd {
  static std::shared_ptr<AutogradMeta>& of(Tensor& t) { return t.autograd_; }
  static const std::shared_ptr<AutogradMeta>& of(const Tensor& t) { return t.autograd_; }
};

// Whether operations record onto the tape now (thread-local; NoGrad turns it off).
bool grad_mode();

// The innermost active jvp level on this thread (0 outside jvp), and the levels' stack.
int jvp_level();
int push_jvp_level();
void pop_jvp_level(int level);

// While one lives on this thread nothing records and no tangent propagates: the scope kernels run
// in, so that their internal views and copies stay outside every graph.
class Untracked {
 public:
  Untracked();
  ~Untracked();
  Untracked(const Untracked&) = delete;
  Untracked& operator=(const Untracked&) = delete;

 private:
  NoGrad no_grad_;
};

// NOTE [nested jvp levels]: a jvp inside a jvp opens a second level; a tensor holds one tangent per
// level, and an op computes its outputs' tangents level by level, innermost first, each with its rule
// run where that level and the ones inside it are hidden: the rule's ops then carry the outer levels'
// tangents of the tangent (the mixed second derivatives), and an outer level's tangent of a value
// computed inside an inner jvp is never lost.

// While one lives, the `count` innermost visible jvp levels are hidden: the scope a jvp rule computes
// a tangent in, so that its own ops see only the outer levels' tangents (else each would
// differentiate itself again).
class OuterJvpLevels {
 public:
  explicit OuterJvpLevels(size_t count = 1);
  ~OuterJvpLevels();
  OuterJvpLevels(const OuterJvpLevels&) = delete;
  OuterJvpLevels& operator=(const OuterJvpLevels&) = delete;

 private:
  size_t count_;
};

// How many jvp levels are open and not hidden on this thread.
size_t visible_jvp_levels();

// A tensor's metadata, created on first use (shared by every copy of the tensor).
AutogradMeta& autograd_meta(Tensor& t);
const AutogradMeta* autograd_meta_if_any(const Tensor& t);
// The tangent of t at the innermost active jvp level, or undefined.
Tensor tangent_of(const Tensor& t);
void set_tangent(Tensor& t, const Tensor& tangent);
// The edge a gradient for t should follow (undefined edge when t needs none).
GradEdge edge_of(const Tensor& t);
// Makes t (fresh, not yet in any graph) output `output` of node.
void attach(Tensor& t, const std::shared_ptr<GradNode>& node, int output);
// Whether a gradient could flow into t (it requires one or was computed from one that does).
bool needs_grad(const Tensor& t);
// Records view = base viewed by spec: a node when base needs a gradient, and the tangent as
// view_of(base's tangent). Called by Tensor's view methods.
void record_view(const Tensor& base, Tensor& view, ViewSpec spec,
                 const std::function<Tensor(const Tensor&)>& view_of);

}  // namespace dew::detail
