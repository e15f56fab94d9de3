// The scalar definition of each unary function, shared by the reference (double) and the portable
// implementation (float or double), so both compute the same mathematics.
#pragma once

#include <cmath>

#include "ops/activation.h"
#include "ops/unary/unary.h"

namespace dew::ops {

template <class T>
T unary_value(UnaryFn f, T x) {
  using std::exp, std::log, std::sqrt, std::tanh, std::fabs;
  switch (f) {
    case UnaryFn::neg: return -x;
    case UnaryFn::abs: return fabs(x);
    case UnaryFn::exp: return exp(x);
    case UnaryFn::log: return log(x);
    case UnaryFn::sqrt: return sqrt(x);
    case UnaryFn::rsqrt: return T(1) / sqrt(x);
    case UnaryFn::square: return x * x;
    case UnaryFn::tanh: return tanh(x);
    case UnaryFn::sigmoid: return T(1) / (T(1) + exp(-x));
    case UnaryFn::silu: return apply_activation(Activation::silu, x);
    case UnaryFn::gelu: return apply_activation(Activation::gelu_erf, x);
    case UnaryFn::gelu_tanh: return apply_activation(Activation::gelu_tanh, x);
    case UnaryFn::relu: return apply_activation(Activation::relu, x);
  }
  return x;
}

}  // namespace dew::ops
