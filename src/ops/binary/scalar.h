// The scalar definition of each binary function, shared by the reference (double) and the kernels,
// so all compute the same mathematics. F is a compile-time constant so loops carry no switch.
#pragma once

#include <cmath>
#include <type_traits>

#include "ops/binary/binary_fn.h"
#include "ops/host_device.h"

namespace dew::ops {

template <BinaryFn F, class T>
DEW_HOST_DEVICE T binary_apply(T a, T b) {
  if constexpr (F == BinaryFn::add)
    return a + b;
  else if constexpr (F == BinaryFn::sub)
    return a - b;
  else if constexpr (F == BinaryFn::mul)
    return a * b;
  else if constexpr (F == BinaryFn::div)
    return a / b;
  else if constexpr (F == BinaryFn::pow)
    return std::pow(a, b);
  else if constexpr (F == BinaryFn::maximum)
    return (a != a || a > b) ? a : b;  // NaN propagates, as in PyTorch
  else if constexpr (F == BinaryFn::minimum)
    return (a != a || a < b) ? a : b;
  else if constexpr (F == BinaryFn::eq)
    return a == b;
  else if constexpr (F == BinaryFn::ne)
    return a != b;
  else if constexpr (F == BinaryFn::lt)
    return a < b;
  else if constexpr (F == BinaryFn::le)
    return a <= b;
  else if constexpr (F == BinaryFn::gt)
    return a > b;
  else
    return a >= b;
}

// Calls body(std::integral_constant<BinaryFn, f>{}), so loops compile without a switch inside.
template <class Body>
void with_binary_fn(BinaryFn f, Body&& body) {
  switch (f) {
#define DEW_BINARY_CASE(name) \
  case BinaryFn::name:        \
    return body(std::integral_constant<BinaryFn, BinaryFn::name>{});
    DEW_BINARY_CASE(add)
    DEW_BINARY_CASE(sub)
    DEW_BINARY_CASE(mul)
    DEW_BINARY_CASE(div)
    DEW_BINARY_CASE(pow) DEW_BINARY_CASE(maximum) DEW_BINARY_CASE(minimum) DEW_BINARY_CASE(eq)
        DEW_BINARY_CASE(ne) DEW_BINARY_CASE(lt) DEW_BINARY_CASE(le) DEW_BINARY_CASE(gt) DEW_BINARY_CASE(ge)
#undef DEW_BINARY_CASE
  }
}

template <class T>
T binary_value(BinaryFn f, T a, T b) {
  T y{};
  with_binary_fn(f, [&](auto fn) { y = binary_apply<decltype(fn)::value>(a, b); });
  return y;
}

}  // namespace dew::ops
