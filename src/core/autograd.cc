// Tensors' differentiation state and the thread-local modes (grad mode, jvp levels); the views'
// recording. The engine that runs the records is src/autodiff/.
#include "core/autograd.h"

namespace dew {
namespace {
thread_local bool grad_mode_on = true;
thread_local std::vector<int> jvp_levels;
thread_local int jvp_levels_made = 0;
thread_local int untracked_depth = 0;
thread_local size_t hidden_levels = 0;  // innermost jvp levels hidden by OuterJvpLevels
// The tensors given a tangent at each open level, so that closing the level drops those tangents: a
// tangent computed while recording holds a graph that reaches back to its tensor (a cycle otherwise).
thread_local std::vector<std::vector<std::weak_ptr<detail::AutogradMeta>>> tangent_holders;
}  // namespace

GradMode::GradMode(bool on) : previous_(grad_mode_on) {
  grad_mode_on = on;
}
GradMode::~GradMode() {
  grad_mode_on = previous_;
}
bool grad_enabled() {
  return grad_mode_on;
}

Tensor& Tensor::requires_grad_(bool on) {
  DEW_REQUIRE(defined(), "[requires_grad_] the tensor is undefined; expected a tensor");
  DEW_REQUIRE(!on || is_floating(dtype_),
              "[requires_grad_] {} is not floating; only f64, f32, bf16 and "
              "f16 tensors have gradients",
              describe());
  detail::AutogradMeta& m = detail::autograd_meta(*this);
  DEW_REQUIRE(!m.node,
              "[requires_grad_] {} was computed by {}; only leaves (tensors no op made from a tensor "
              "that requires a gradient) can be marked; use detach() for a new leaf",
              describe(), m.node->op);
  m.requires_grad = on;
  return *this;
}

bool Tensor::requires_grad() const {
  return detail::needs_grad(*this);
}

Tensor Tensor::grad() const {
  const detail::AutogradMeta* m = detail::autograd_meta_if_any(*this);
  return m ? m->grad : Tensor();
}

void Tensor::zero_grad() {
  if (autograd_) autograd_->grad = Tensor();
}

Tensor Tensor::detach() const {
  Tensor t = *this;
  t.autograd_.reset();
  return t;
}

uint64_t Tensor::version() const {
  return storage_ ? storage_->version : 0;
}

void Tensor::bump_version() {
  if (storage_) ++storage_->version;
}

namespace detail {

bool grad_mode() {
  return grad_mode_on;
}

int jvp_level() {
  if (untracked_depth > 0 || jvp_levels.size() <= hidden_levels) return 0;
  return jvp_levels[jvp_levels.size() - 1 - hidden_levels];
}

OuterJvpLevels::OuterJvpLevels(size_t count) : count_(count) {
  hidden_levels += count;
}
OuterJvpLevels::~OuterJvpLevels() {
  hidden_levels -= count_;
}

size_t visible_jvp_levels() {
  if (untracked_depth > 0 || jvp_levels.size() <= hidden_levels) return 0;
  return jvp_levels.size() - hidden_levels;
}

Untracked::Untracked() {
  ++untracked_depth;
}
Untracked::~Untracked() {
  --untracked_depth;
}
int push_jvp_level() {
  jvp_levels.push_back(++jvp_levels_made);
  tangent_holders.emplace_back();
  return jvp_levels.back();
}
void pop_jvp_level(int level) {
  DEW_REQUIRE(!jvp_levels.empty() && jvp_levels.back() == level && hidden_levels == 0,
              "[jvp] levels closed out of order");
  jvp_levels.pop_back();
  for (const std::weak_ptr<AutogradMeta>& holder : tangent_holders.back())
    if (std::shared_ptr<AutogradMeta> m = holder.lock())
      std::erase_if(m->tangents, [level](const auto& entry) { return entry.first == level; });
  tangent_holders.pop_back();
}

AutogradMeta& autograd_meta(Tensor& t) {
  std::shared_ptr<AutogradMeta>& m = TensorAutograd::of(t);
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}
const AutogradMeta* autograd_meta_if_any(const Tensor& t) {
  return TensorAutograd::of(t).get();
}

Tensor tangent_of(const Tensor& t) {
  const AutogradMeta* m = autograd_meta_if_any(t);
  if (!m || m->tangents.empty()) return Tensor();
  const int level = jvp_level();
  for (const auto& [at, tangent] : m->tangents)
    if (at == level && level != 0) return tangent;
  return Tensor();
}

void set_tangent(Tensor& t, const Tensor& tangent) {
  const int level = jvp_level();
  if (level == 0) return;
  AutogradMeta& m = autograd_meta(t);
  std::erase_if(m.tangents, [level](const auto& entry) { return entry.first == level; });
  if (!tangent.defined()) return;
  m.tangents.emplace_back(level, tangent);
  for (size_t i = 0; i < jvp_levels.size(); ++i)
    if (jvp_levels[i] == level) tangent_holders[i].push_back(TensorAutograd::of(t));
}

bool needs_grad(const Tensor& t) {
  const AutogradMeta* m = autograd_meta_if_any(t);
  return m && (m->requires_grad || m->node);
}

GradEdge edge_of(const Tensor& t) {
  const std::shared_ptr<AutogradMeta>& m = TensorAutograd::of(t);
  if (!m) return {};
  if (m->node) return {m->node, m->output, {}};
  if (m->requires_grad) return {nullptr, 0, m};
  return {};
}

void attach(Tensor& t, const std::shared_ptr<GradNode>& node, int output) {
  AutogradMeta& m = autograd_meta(t);
  m.node = node;
  m.output = output;
}

void record_view(const Tensor& base, Tensor& view, ViewSpec spec,
                 const std::function<Tensor(const Tensor&)>& view_of) {
  if (grad_mode() && needs_grad(base)) {
    auto node = std::make_shared<GradNode>();
    static constexpr const char* kNames[] = {"slice",  "select",    "permute", "reshape",
                                             "expand", "unsqueeze", "copy",    "to_device"};
    node->op = kNames[size_t(spec.kind)];
    node->inputs = {edge_of(base)};
    node->view = std::make_unique<ViewSpec>(std::move(spec));
    attach(view, node, 0);
  }
  // The view of the base's tangent at each level (NOTE [nested jvp levels]).
  for (size_t depth = 0, levels = visible_jvp_levels(); depth < levels; ++depth) {
    OuterJvpLevels inside(depth);  // the level `depth` levels out is now the innermost visible one
    const Tensor base_tangent = tangent_of(base);
    if (!base_tangent.defined()) continue;
    Tensor tangent;
    {
      OuterJvpLevels rule_scope;
      tangent = view_of(base_tangent);
    }
    set_tangent(view, tangent);
  }
}

}  // namespace detail
}  // namespace dew
