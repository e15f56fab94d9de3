// The scalar definition of each unary function, shared by the reference (double) and the portable
// implementation (float or double), so both compute the same mathematics.
#pragma once

#include <cmath>
#include <type_traits>

#include "ops/activation.h"
#include "ops/host_device.h"
#include "ops/unary/unary_fn.h"

namespace dew::ops {

// F is a compile-time constant so that loops over one function compile without a switch inside.
template <UnaryFn F, class T>
DEW_HOST_DEVICE T unary_apply(T x) {
  using std::exp, std::log, std::sqrt, std::tanh, std::fabs;
  if constexpr (F == UnaryFn::neg)
    return -x;
  else if constexpr (F == UnaryFn::abs)
    return fabs(x);
  else if constexpr (F == UnaryFn::exp)
    return exp(x);
  else if constexpr (F == UnaryFn::log)
    return log(x);
  else if constexpr (F == UnaryFn::sqrt)
    return sqrt(x);
  else if constexpr (F == UnaryFn::rsqrt)
    return T(1) / sqrt(x);
  else if constexpr (F == UnaryFn::square)
    return x * x;
  else if constexpr (F == UnaryFn::tanh)
    return tanh(x);
  else if constexpr (F == UnaryFn::sigmoid)
    return times_sigmoid(T(1), x);
  else if constexpr (F == UnaryFn::silu)
    return apply_activation(Activation::silu, x);
  else if constexpr (F == UnaryFn::gelu)
    return apply_activation(Activation::gelu_erf, x);
  else if constexpr (F == UnaryFn::gelu_tanh)
    return apply_activation(Activation::gelu_tanh, x);
  else
    return apply_activation(Activation::relu, x);
}

// Calls body(std::integral_constant<UnaryFn, f>{}).
template <class Body>
void with_unary_fn(UnaryFn f, Body&& body) {
  switch (f) {
#define DEW_UNARY_CASE(name) \
  case UnaryFn::name:        \
    return body(std::integral_constant<UnaryFn, UnaryFn::name>{});
    DEW_UNARY_CASE(neg)
    DEW_UNARY_CASE(abs)
    DEW_UNARY_CASE(exp)
    DEW_UNARY_CASE(log)
    DEW_UNARY_CASE(sqrt) DEW_UNARY_CASE(rsqrt) DEW_UNARY_CASE(square) DEW_UNARY_CASE(tanh)
        DEW_UNARY_CASE(sigmoid) DEW_UNARY_CASE(silu) DEW_UNARY_CASE(gelu) DEW_UNARY_CASE(gelu_tanh)
            DEW_UNARY_CASE(relu)
#undef DEW_UNARY_CASE
  }
}

template <class T>
T unary_value(UnaryFn f, T x) {
  T y{};
  with_unary_fn(f, [&](auto fn) { y = unary_apply<decltype(fn)::value>(x); });
  return y;
}

}  // namespace dew::ops
