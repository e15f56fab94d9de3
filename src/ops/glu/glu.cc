// Gated units: names, validation, the registry, cases and the public functions.
#include "ops/glu/glu.h"

#include <cmath>

#include "ops/activation.h"

namespace dew::ops {

std::vector<const Tensor*> GluArgs::inputs() const {
  if (backward) return {&dy, &gate, &up};
  return {&gate, &up};
}
std::vector<Tensor*> GluArgs::mutable_inputs() {
  if (backward) return {&dy, &gate, &up};
  return {&gate, &up};
}

std::string_view Glu::name(const Args& a) {
  switch (a.activation) {
    case Activation::silu:
      return a.backward ? "swiglu_backward" : "swiglu";
    case Activation::gelu_erf:
      return a.backward ? "geglu_backward" : "geglu";
    default:
      return a.backward ? "geglu_tanh_backward" : "geglu_tanh";
  }
}

std::vector<OutputSpec> Glu::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()), "[{}] gate is {}; expected a floating dtype", op, a.gate.describe());
  for (const Tensor* t : a.inputs())
    DEW_REQUIRE(t->shape() == a.gate.shape() && t->dtype() == a.dtype(),
                "[{}] {} differs from gate {}; expected one shape and dtype", op, t->describe(),
                a.gate.describe());
  if (a.backward) return {{a.gate.shape(), a.dtype()}, {a.gate.shape(), a.dtype()}};
  return {{a.gate.shape(), a.dtype()}};
}

const select::Registry<GluArgs>& Glu::registry() {
  static const select::Registry<GluArgs> r = [] {
    select::Registry<GluArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_glu_cuda, reg);
    avx512::add_glu_cpu(reg);
    avx2::add_glu_cpu(reg);
    add_glu_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<GluArgs>> Glu::cases(std::string_view op) {
  const bool backward = op.ends_with("_backward");
  const Activation act = op.starts_with("swiglu")       ? Activation::silu
                         : op.starts_with("geglu_tanh") ? Activation::gelu_tanh
                                                        : Activation::gelu_erf;
  auto make = [=](Shape s) {
    return [=](DType t, RandomKey k) {
      GluArgs a{backward ? random_input(s, t, {k.seed, k.stream + 2}) : Tensor(), random_input(s, t, k, 3.0),
                random_input(s, t, {k.seed, k.stream + 1}), act, backward};
      return a;
    };
  };
  // gate and up as the two column ranges of one product (a packed model's, NOTE [rows read in place]).
  const auto halves = [=](DType t, RandomKey k) {
    const Tensor both = random_input({2, 3, 2 * 37}, t, k, 3.0);
    return GluArgs{backward ? random_input({2, 3, 37}, t, {k.seed, k.stream + 2}) : Tensor(),
                   both.slice(-1, 0, 37), both.slice(-1, 37, 2 * 37), act, backward};
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"rows_688", {"ci"}, all, make({6, 688})},
          {"odd", {"ci", "edge"}, all, make({3, 5, 37})},
          {"halves_of_one_product", {"ci", "edge"}, all, halves},
          {"llama8b_mlp", {"bench"}, {DType::f32, DType::bf16, DType::f16}, make({512, 14336})}};
}

}  // namespace dew::ops

namespace dew {
namespace {
std::vector<Tensor> glu(Activation act, const Tensor& dy, const Tensor& gate, const Tensor& up,
                        bool backward) {
  return ops::run_op<ops::Glu>(ops::GluArgs{dy, gate, up, act, backward});
}
}  // namespace

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  return glu(Activation::silu, {}, gate, up, false)[0];
}
Tensor geglu(const Tensor& gate, const Tensor& up, bool tanh_approximation) {
  return glu(tanh_approximation ? Activation::gelu_tanh : Activation::gelu_erf, {}, gate, up, false)[0];
}
GluGradients swiglu_backward(const Tensor& dy, const Tensor& gate, const Tensor& up) {
  auto g = glu(Activation::silu, dy, gate, up, true);
  return {g[0], g[1]};
}
GluGradients geglu_backward(const Tensor& dy, const Tensor& gate, const Tensor& up, bool tanh_approximation) {
  auto g = glu(tanh_approximation ? Activation::gelu_tanh : Activation::gelu_erf, dy, gate, up, true);
  return {g[0], g[1]};
}

}  // namespace dew
