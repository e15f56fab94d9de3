// The unary functions' names as an enum: the vocabulary shared by the op (unary.h) and the scalar
// mathematics (scalar.h) that host and device kernels both compile.
#pragma once

#include <cstdint>

namespace dew::ops {

enum class UnaryFn : uint8_t {
  neg,
  abs,
  exp,
  log,
  sqrt,
  rsqrt,
  square,
  tanh,
  sigmoid,
  silu,
  gelu,
  gelu_tanh,
  relu
};

}  // namespace dew::ops
