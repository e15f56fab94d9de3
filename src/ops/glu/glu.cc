// Gated units: names, validation, float64 reference with error magnitudes, registry, cases and the
// public functions.
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

std::vector<Truth> Glu::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): the activation's own (activation_lipschitz |g| + |act|) times
  // |up|; its derivative's terms are bounded by 1 + |g| + 0.11 |g|^3 (the tanh-GELU's are the largest).
  auto g = a.gate.to_f64_vector(), u = a.up.to_f64_vector();
  auto dy = a.backward ? a.dy.to_f64_vector() : std::vector<double>();
  const double lip = activation_lipschitz(a.activation);
  std::vector<double> y0(g.size()), m0(g.size()), y1(a.backward ? g.size() : 0), m1(y1.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double f = apply_activation(a.activation, g[i]), f_mag = lip * std::fabs(g[i]) + std::fabs(f);
    if (!a.backward) {
      y0[i] = f * u[i];
      m0[i] = f_mag * std::fabs(u[i]);
      continue;
    }
    const double df = activation_derivative(a.activation, g[i]);
    const double ag = std::fabs(g[i]);
    y0[i] = dy[i] * u[i] * df;
    m0[i] = std::fabs(dy[i] * u[i]) * (1 + ag + 0.11 * ag * ag * ag);
    y1[i] = dy[i] * f;
    m1[i] = std::fabs(dy[i]) * f_mag;
  }
  std::vector<Truth> out{{Tensor::from_values(y0, a.gate.shape(), DType::f64),
                          Tensor::from_values(m0, a.gate.shape(), DType::f64), 12}};
  if (a.backward)
    out.push_back({Tensor::from_values(y1, a.gate.shape(), DType::f64),
                   Tensor::from_values(m1, a.gate.shape(), DType::f64), 12});
  return out;
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
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"rows_688", {"ci"}, all, make({6, 688})},
          {"odd", {"ci", "edge"}, all, make({3, 5, 37})},
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
