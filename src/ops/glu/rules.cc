// The gated units' rules. Forward: vjp through the fused backward ops, jvp too (y' = act'(g) g' u +
// act(g) u', the backward op's d_gate with dy = g' plus its d_up with dy = u'). Backward ops
// (d_gate = dy u act'(g), d_up = dy act(g)): their own vjp and jvp, written with ops from act' and
// act'' (act_second_times below), so gradients of gradients pass through a GLU.
#include <cmath>

#include "ops/activation.h"
#include "ops/glu/glu.h"
#include "ops/rules_common.h"
#include "ops/unary/unary.h"

namespace dew::ops {
namespace {

std::vector<Tensor> glu_backward(Activation activation, const Tensor& dy, const Tensor& gate,
                                 const Tensor& up) {
  return run_op<Glu>(GluArgs{dy, gate, up, activation, true});
}

Tensor act(Activation a, const Tensor& g) {
  return a == Activation::silu ? silu(g) : gelu(g, a == Activation::gelu_tanh);
}

// z act'(g) and z act''(g), with ops.
Tensor act_prime_times(Activation a, const Tensor& z, const Tensor& g) {
  return times_unary_derivative(unary_of(a), z, g, Tensor());
}

Tensor act_second_times(Activation a, const Tensor& z, const Tensor& g) {
  auto c = [&](double v) { return scalar_like(v, g); };
  if (a == Activation::silu) {  // s (1 - s) (2 + g (1 - 2 s)), s = sigmoid(g)
    const Tensor s = sigmoid(g);
    const Tensor second = mul(mul(s, sub(c(1), s)), add(c(2), mul(g, sub(c(1), mul(c(2), s)))));
    return mul(z, second);
  }
  if (a == Activation::gelu_erf) {  // phi(g) (2 - g^2), phi the standard normal density
    const Tensor g2 = square(g);
    const Tensor phi = mul(c(1 / std::sqrt(2 * 3.14159265358979323846)), exp(mul(c(-0.5), g2)));
    return mul(z, mul(phi, sub(c(2), g2)));
  }
  // tanh form: f = g (1 + T) / 2, T = tanh(u), u = k (g + c3 g^3): f'' = T' + g ((1 - T^2) u'' - 2 T T' u') /
  // 2 with u' = k (1 + 3 c3 g^2), u'' = 6 k c3 g, T' = (1 - T^2) u'.
  const double k = kGeluTanhScale, c3 = kGeluTanhCubic;
  const Tensor g2 = square(g);
  const Tensor T = tanh(mul(c(k), add(g, mul(c(c3), mul(g2, g)))));
  const Tensor sech2 = sub(c(1), square(T));
  const Tensor du = mul(c(k), add(c(1), mul(c(3 * c3), g2))), d2u = mul(c(6 * k * c3), g);
  const Tensor dT = mul(sech2, du);
  const Tensor second = add(dT, mul(mul(c(0.5), g), sub(mul(sech2, d2u), mul(mul(c(2), T), mul(dT, du)))));
  return mul(z, second);
}

}  // namespace

Differentiation Glu::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Glu::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Glu::vjp(const Args& a) {
  const SavedTensor gate(a.gate, name(a)), up(a.up, name(a)), dy(a.dy, name(a));
  const Activation activation = a.activation;
  if (!a.backward)
    return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
      return glu_backward(activation, d[0], gate.get(), up.get());
    };
  // Cotangents A (of d_gate) and B (of d_up) back to dy, gate and up.
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor &g = gate.get(), &u = up.get(), &y = dy.get();
    Tensor d_dy, d_gate, d_up;
    if (d[0].defined()) {
      d_dy = act_prime_times(activation, mul(d[0], u), g);
      d_gate = act_second_times(activation, mul(mul(d[0], y), u), g);
      d_up = act_prime_times(activation, mul(d[0], y), g);
    }
    if (d[1].defined()) {
      d_dy = add_defined(d_dy, mul(d[1], act(activation, g)));
      d_gate = add_defined(d_gate, act_prime_times(activation, mul(d[1], y), g));
    }
    return {d_dy, d_gate, d_up};
  };
}

std::vector<Tensor> Glu::jvp(const Args& a, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  if (!a.backward) {
    Tensor dy;
    if (t[0].defined()) dy = glu_backward(a.activation, t[0], a.gate, a.up)[0];
    if (t[1].defined()) dy = add_defined(dy, glu_backward(a.activation, t[1], a.gate, a.up)[1]);
    return {dy};
  }
  // Tangents of (dy, gate, up) to those of d_gate = dy u act'(g) and d_up = dy act(g).
  const Tensor &g = a.gate, &u = a.up, &y = a.dy;
  Tensor t_gate_out, t_up_out;
  if (t[0].defined()) {
    t_gate_out = act_prime_times(a.activation, mul(t[0], u), g);
    t_up_out = mul(t[0], act(a.activation, g));
  }
  if (t[2].defined()) t_gate_out = add_defined(t_gate_out, act_prime_times(a.activation, mul(y, t[2]), g));
  if (t[1].defined()) {
    t_gate_out = add_defined(t_gate_out, act_second_times(a.activation, mul(mul(y, u), t[1]), g));
    t_up_out = add_defined(t_up_out, act_prime_times(a.activation, mul(y, t[1]), g));
  }
  return {t_gate_out, t_up_out};
}

}  // namespace dew::ops
