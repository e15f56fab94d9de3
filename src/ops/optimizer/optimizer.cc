// The optimizer ops: output rules, constants, registries, cases and the public in-place functions.
#include "ops/optimizer/optimizer.h"

#include <cmath>

namespace dew::ops {

std::vector<const Tensor*> OptimizerUpdateArgs::inputs() const {
  std::vector<const Tensor*> v{&param, &grad};
  for (const Tensor& s : state) v.push_back(&s);
  return v;
}
std::vector<Tensor*> OptimizerUpdateArgs::mutable_inputs() {
  std::vector<Tensor*> v{&param, &grad};
  for (Tensor& s : state) v.push_back(&s);
  return v;
}

std::string_view OptimizerUpdate::name(const Args& a) {
  constexpr std::string_view names[] = {"adamw_update", "sgd_update", "lion_update"};
  return names[a.step.index()];
}

std::vector<OutputSpec> OptimizerUpdate::infer(const Args& a) {
  const std::string_view op = name(a);
  DEW_REQUIRE(a.param.defined() && a.grad.defined(), "[{}] a parameter and its gradient are required", op);
  require_same_device(op.data(), a.inputs());
  DEW_REQUIRE(a.param.dtype() == DType::f32 || a.param.dtype() == DType::f64,
              "[{}] the parameter is {}; expected f32 or f64 (the master weights)", op, a.param.describe());
  DEW_REQUIRE(a.grad.dtype() == a.param.dtype() && a.grad.shape() == a.param.shape(),
              "[{}] the gradient is {} for a parameter {}; expected its shape and dtype", op,
              a.grad.describe(), a.param.describe());
  const size_t states = a.step.index() == 0 ? 2 : a.step.index() == 2 ? 1 : a.state.size();
  DEW_REQUIRE(a.state.size() == states && states <= 2, "[{}] {} state tensors given; expected {}", op,
              a.state.size(), states);
  for (const Tensor& s : a.state)
    DEW_REQUIRE(s.defined() && s.dtype() == a.param.dtype() && s.shape() == a.param.shape(),
                "[{}] a state tensor is {}; expected the parameter's shape and dtype ({})", op,
                s.defined() ? s.describe() : "undefined", a.param.describe());
  if (const auto* s = std::get_if<AdamWStep>(&a.step))
    DEW_REQUIRE(s->beta1 >= 0 && s->beta1 < 1 && s->beta2 >= 0 && s->beta2 < 1 && s->eps > 0 && s->step >= 1,
                "[adamw_update] betas ({}, {}), eps {}, step {}; expected betas in [0, 1), eps > 0 and a "
                "1-based step",
                s->beta1, s->beta2, s->eps, s->step);
  if (const auto* s = std::get_if<SgdStep>(&a.step))
    DEW_REQUIRE(
        s->momentum >= 0 && s->dampening >= 0 && (s->momentum > 0) == (states == 1) &&
            (!s->nesterov || (s->momentum > 0 && s->dampening == 0)),
        "[sgd_update] momentum {} with {} buffer, dampening {}, nesterov {}; expected a buffer exactly "
        "when momentum > 0, and for Nesterov momentum > 0 and no dampening",
        s->momentum, states, s->dampening, s->nesterov);
  if (const auto* s = std::get_if<LionStep>(&a.step))
    DEW_REQUIRE(s->beta1 >= 0 && s->beta1 < 1 && s->beta2 >= 0 && s->beta2 < 1,
                "[lion_update] betas ({}, {}); expected betas in [0, 1)", s->beta1, s->beta2);
  std::vector<OutputSpec> out(1 + states, OutputSpec{a.param.shape(), a.param.dtype()});
  return out;
}

AdamWCoefficients adamw_coefficients(const AdamWStep& s) {
  const double bias1 = 1 - std::pow(s.beta1, double(s.step)), bias2 = 1 - std::pow(s.beta2, double(s.step));
  return {1 - s.lr * s.weight_decay, 1 - s.beta1, s.beta2,        1 - s.beta2,
          std::sqrt(bias2),          s.eps,       -(s.lr / bias1)};
}
SgdCoefficients sgd_coefficients(const SgdStep& s, bool has_momentum) {
  return {s.weight_decay, s.momentum, 1 - s.dampening, -s.lr, has_momentum, s.first, s.nesterov};
}
LionCoefficients lion_coefficients(const LionStep& s) {
  return {1 - s.lr * s.weight_decay, s.lr, s.beta1, 1 - s.beta1, s.beta2, 1 - s.beta2};
}

Tensor prepare_in_place(const OptimizerUpdateArgs& a, std::vector<Tensor>& outs) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& in = i == 0 ? a.param : a.state[i - 1];
    if (outs[i].raw_data() != in.raw_data()) outs[i].copy_from(in);
  }
  return a.grad.contiguous();
}

const select::Registry<OptimizerUpdateArgs>& OptimizerUpdate::registry() {
  static const select::Registry<OptimizerUpdateArgs> r = [] {
    select::Registry<OptimizerUpdateArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_optimizer_update_cuda, reg);
    avx512::add_optimizer_update_cpu(reg);
    avx2::add_optimizer_update_cpu(reg);
    add_optimizer_update_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<OptimizerUpdateArgs>> OptimizerUpdate::cases(std::string_view op) {
  using Step = decltype(OptimizerUpdateArgs::step);
  // Moments as training leaves them: exp_avg about the gradient's size, exp_avg_sq positive.
  auto make = [](Shape shape, Step step, int states) {
    return [=](DType t, RandomKey k) {
      OptimizerUpdateArgs a{
          random_input(shape, t, k), random_input(shape, t, {k.seed, k.stream + 1}, 0.1), {}, step};
      if (states >= 1) a.state.push_back(random_input(shape, t, {k.seed, k.stream + 2}, 0.1));
      if (states >= 2) a.state.push_back(square(random_input(shape, t, {k.seed, k.stream + 3}, 0.1)));
      return a;
    };
  };
  const std::vector<DType> dtypes{DType::f32, DType::f64};
  std::vector<Case<OptimizerUpdateArgs>> cases;
  if (op == "adamw_update") {
    const AdamWStep later{
        .lr = 3e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .step = 7};
    AdamWStep first = later;
    first.step = 1;
    cases = {{"matrix", {"ci"}, dtypes, make({37, 65}, later, 2)},
             {"first_step", {"ci", "edge"}, dtypes, make({300}, first, 2)},
             {"gpt2_mlp", {"bench"}, {DType::f32}, make({768, 3072}, later, 2)}};
  } else if (op == "sgd_update") {
    const SgdStep momentum{
        .lr = 1e-2, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01, .first = false};
    const SgdStep nesterov{
        .lr = 1e-2, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true, .first = false};
    const SgdStep plain{.lr = 1e-2, .weight_decay = 0.01};
    const SgdStep first{.lr = 1e-2, .momentum = 0.9, .nesterov = true, .first = true};
    cases = {{"momentum", {"ci"}, dtypes, make({37, 65}, momentum, 1)},
             {"nesterov", {"ci"}, dtypes, make({37, 65}, nesterov, 1)},
             {"plain", {"ci", "edge"}, dtypes, make({300}, plain, 0)},
             {"first_step", {"ci", "edge"}, dtypes, make({300}, first, 1)},
             {"gpt2_mlp", {"bench"}, {DType::f32}, make({768, 3072}, momentum, 1)}};
  } else {
    const LionStep lion{.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1};
    cases = {{"matrix", {"ci"}, dtypes, make({37, 65}, lion, 1)},
             {"gpt2_mlp", {"bench"}, {DType::f32}, make({768, 3072}, lion, 1)}};
  }
  return cases;
}

std::vector<OutputSpec> SquaredNorm::infer(const Args& a) {
  DEW_REQUIRE(a.x.defined() && is_floating(a.x.dtype()), "[squared_norm] x is {}; expected a floating tensor",
              a.x.defined() ? a.x.describe() : "undefined");
  return {{Shape{}, DType::f64}};
}

const select::Registry<OneInputArgs>& SquaredNorm::registry() {
  static const select::Registry<OneInputArgs> r = [] {
    select::Registry<OneInputArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_squared_norm_cuda, reg);
    avx512::add_squared_norm_cpu(reg);
    avx2::add_squared_norm_cpu(reg);
    add_squared_norm_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<OneInputArgs>> SquaredNorm::cases(std::string_view) {
  auto make = [](Shape shape) {
    return [=](DType t, RandomKey k) { return OneInputArgs{random_input(shape, t, k)}; };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"blocks_and_tail", {"ci"}, all, make({3 * 16384 + 77})},
          {"matrix", {"ci", "edge"}, all, make({7, 33})},
          {"gpt2_mlp", {"bench"}, {DType::f32}, make({768, 3072})}};
}

}  // namespace dew::ops

namespace dew {
namespace {

// The update written into the parameter and its state, through the selector like every op.
void update_in_place(ops::OptimizerUpdateArgs args, Tensor& param, std::vector<Tensor*> state) {
  std::vector<Tensor> outs{param};
  for (Tensor* s : state) outs.push_back(*s);
  ops::run_op_into<ops::OptimizerUpdate>(args, outs);
}

}  // namespace

void adamw_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                  const AdamWStep& s) {
  update_in_place({param, grad, {exp_avg, exp_avg_sq}, s}, param, {&exp_avg, &exp_avg_sq});
}
void sgd_update(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdStep& s) {
  if (momentum_buffer.defined())
    update_in_place({param, grad, {momentum_buffer}, s}, param, {&momentum_buffer});
  else
    update_in_place({param, grad, {}, s}, param, {});
}
void lion_update(Tensor& param, const Tensor& grad, Tensor& exp_avg, const LionStep& s) {
  update_in_place({param, grad, {exp_avg}, s}, param, {&exp_avg});
}
Tensor squared_norm(const Tensor& x) {
  return ops::run_op<ops::SquaredNorm>(ops::OneInputArgs{x})[0];
}

}  // namespace dew
