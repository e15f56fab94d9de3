// Scalar activation functions shared by the unary ops and the GEMM epilogue, so both compute the same
// mathematics. Templated on the compute type (double in references, float in f32-accumulating kernels).
#pragma once

#include <dew/activation.h>

#include <cmath>
#include <string_view>

#include "ops/host_device.h"

namespace dew::ops {

std::string_view activation_name(Activation a);

// num sigmoid(z) = num / (1 + exp(-z)), and num exp(z) below z = -80, where 1 + exp(z) rounds to 1:
// past -88.7 exp(-z) overflows in float and the plain form gives 0 (sigmoid(-89) is 2.2e-39, silu(-89)
// -2.0e-37). One rounding after the exp either way, as the plain form has.
template <class T>
DEW_HOST_DEVICE T times_sigmoid(T num, T z) {
  using std::exp;
  return z < T(-80) ? num * exp(z) : num / (T(1) + exp(-z));
}

// GELU's tanh form, 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3): the argument u and du/dx.
// vector_math.h defines gelu_tanh_argument again inside the ISA region, from these constants, so that
// FloatVec can instantiate it (a template defined out here cannot inline FloatVec's operators).
inline constexpr double kGeluTanhScale = 0.79788456080286535588, kGeluTanhCubic = 0.044715;
template <class T>
DEW_HOST_DEVICE T gelu_tanh_argument(T x) {
  return T(kGeluTanhScale) * (x + T(kGeluTanhCubic) * x * x * x);
}
// du/dx for act', which multiplies it by 1 - tanh(u)^2 (or sigmoid(-2u)): |x| is capped at 1e4, where
// that factor is already 0 in float and double, since from |x| ~ 2e19 x^2 overflows float and 0 * inf
// made tanh-GELU's derivative NaN where it is 1.
template <class T>
DEW_HOST_DEVICE T gelu_tanh_argument_derivative(T x) {
  const T capped = x < T(1e4) && x > T(-1e4) ? x : T(1e4);
  return T(kGeluTanhScale) * (T(1) + T(3 * kGeluTanhCubic) * capped * capped);
}

template <class T>
DEW_HOST_DEVICE T apply_activation(Activation a, T x) {
  using std::erf, std::exp, std::tanh;
  switch (a) {
    case Activation::none:
      return x;
    case Activation::relu:  // NaN stays NaN, as PyTorch's relu keeps it; -0 gives +0
      return x > T(0) || x != x ? x : T(0);
    case Activation::gelu_erf:
      return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
    case Activation::gelu_tanh:
      return T(0.5) * x * (T(1) + tanh(gelu_tanh_argument(x)));
    case Activation::silu:
      return times_sigmoid(x, x);
  }
  return x;
}

// d act / dx, for the backward ops (and the vjp rules to come).
template <class T>
DEW_HOST_DEVICE T activation_derivative(Activation a, T x) {
  using std::erf, std::exp, std::tanh;
  switch (a) {
    case Activation::none:
      return T(1);
    case Activation::relu:
      return x > T(0) ? T(1) : T(0);
    case Activation::gelu_erf:  // Phi(x) + x phi(x)
      return T(0.5) * (T(1) + erf(x * T(0.70710678118654752440))) +
             x * T(0.39894228040143267794) * exp(T(-0.5) * x * x);
    case Activation::gelu_tanh: {
      const T t = tanh(gelu_tanh_argument(x));
      return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * gelu_tanh_argument_derivative(x);
    }
    case Activation::silu: {
      const T s = times_sigmoid(T(1), x);
      return s * (T(1) + x * (T(1) - s));
    }
  }
  return T(1);
}

// Bound bookkeeping for the gate: the rounding steps of one evaluation, and a Lipschitz constant so an
// error in the argument carries through (|f'| <= 1.13 for both GELUs and SiLU).
inline int activation_steps(Activation a) {
  return a == Activation::none || a == Activation::relu ? 0 : 8;
}
inline double activation_lipschitz(Activation a) {
  return a == Activation::none || a == Activation::relu ? 1.0 : 1.13;
}

}  // namespace dew::ops
