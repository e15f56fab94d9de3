// The unary ops' vjp and jvp: both are the derivative f'(x) times the incoming gradient or tangent,
// with f'(x) written with ops (from y where that is cheaper: exp, sqrt, tanh, sigmoid).
#include "ops/rules_common.h"
#include "ops/unary/unary.h"

namespace dew::ops {
namespace {

bool reads_output(UnaryFn f) {
  return f == UnaryFn::exp || f == UnaryFn::sqrt || f == UnaryFn::rsqrt || f == UnaryFn::tanh ||
         f == UnaryFn::sigmoid;
}

}  // namespace

UnaryFn unary_of(Activation act) {
  switch (act) {
    case Activation::relu:
      return UnaryFn::relu;
    case Activation::gelu_erf:
      return UnaryFn::gelu;
    case Activation::gelu_tanh:
      return UnaryFn::gelu_tanh;
    case Activation::silu:
      return UnaryFn::silu;
    default:
      fail("[rules] activation {} has no unary function", int(act));
  }
}

Tensor times_unary_derivative(UnaryFn f, const Tensor& g, const Tensor& x, const Tensor& y) {
  auto c = [&](double v) { return scalar_like(v, g); };
  switch (f) {
    case UnaryFn::neg:
      return neg(g);
    case UnaryFn::abs:  // sign(x); 0 at 0, as PyTorch
      return where(gt(x, c(0)), g, where(lt(x, c(0)), neg(g), c(0)));
    case UnaryFn::exp:
      return mul(g, y);
    case UnaryFn::log:
      return div(g, x);
    case UnaryFn::sqrt:
      return div(mul(g, c(0.5)), y);
    case UnaryFn::rsqrt:  // -x^(-3/2) / 2 = -y^3 / 2
      return mul(mul(g, c(-0.5)), mul(y, square(y)));
    case UnaryFn::square:
      return mul(g, mul(x, c(2)));
    case UnaryFn::tanh:
      return mul(g, sub(c(1), square(y)));
    case UnaryFn::sigmoid:
      return mul(g, mul(y, sub(c(1), y)));
    // s (1 + x (1 - s)) with s = sigmoid(x); Phi(x) + x phi(x) and its tanh form: swiglu_backward's
    // and geglu_backward's d_gate with up = 1, one fused pass where the formula written with ops would
    // take several (a dozen for GELU) over the tensor.
    case UnaryFn::silu:
      return swiglu_backward(g, x, Tensor::full(x.shape(), 1.0, x.dtype(), x.device())).d_gate;
    case UnaryFn::gelu:
    case UnaryFn::gelu_tanh:
      return geglu_backward(g, x, Tensor::full(x.shape(), 1.0, x.dtype(), x.device()),
                            f == UnaryFn::gelu_tanh)
          .d_gate;
    case UnaryFn::relu:
      return where(gt(x, c(0)), g, c(0));
  }
  fail("[{}] has no derivative", unary_name(f));
}

Differentiation Unary::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Unary::vjp_reads_outputs(const Args& a) {
  return {reads_output(a.fn)};
}

VjpRule Unary::vjp(const Args& a) {
  const UnaryFn f = a.fn;
  const SavedTensor x =
      reads_output(f) || f == UnaryFn::neg ? SavedTensor() : SavedTensor(a.x, unary_name(f));
  return [f, x](const std::vector<Tensor>& d, const std::vector<Tensor>& y) -> std::vector<Tensor> {
    return {times_unary_derivative(f, d[0], x.get(), y[0])};
  };
}

std::vector<Tensor> Unary::jvp(const Args& a, const std::vector<Tensor>& outs, const std::vector<Tensor>& t) {
  return {times_unary_derivative(a.fn, t[0], a.x, outs[0])};
}

}  // namespace dew::ops
