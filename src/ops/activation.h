// Scalar activation functions shared by the unary ops and the GEMM epilogue, so both compute the same
// mathematics. Templated on the compute type (double in references, float in f32-accumulating kernels).
#pragma once

#include <dew/activation.h>

#include <cmath>
#include <string_view>

#include "ops/host_device.h"

namespace dew::ops {

std::string_view activation_name(Activation a);

template <class T>
DEW_HOST_DEVICE T apply_activation(Activation a, T x) {
  using std::erf, std::exp, std::tanh;
  switch (a) {
    case Activation::none:
      return x;
    case Activation::relu:
      return x > T(0) ? x : T(0);
    case Activation::gelu_erf:
      return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
    case Activation::gelu_tanh: {
      const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
      return T(0.5) * x * (T(1) + tanh(inner));
    }
    case Activation::silu:
      return x / (T(1) + exp(-x));
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
      const T k = T(0.79788456080286535588), t = tanh(k * (x + T(0.044715) * x * x * x));
      return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3 * 0.044715) * x * x);
    }
    case Activation::silu: {
      const T s = T(1) / (T(1) + exp(-x));
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
