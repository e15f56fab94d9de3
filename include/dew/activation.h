// The activation functions a fused op can apply (matmul's epilogue, a GLU's gate). Only the names:
// their mathematics is src/ops/activation.h, shared by host and device code.
#pragma once

#include <cstdint>

namespace dew {

enum class Activation : uint8_t { none, relu, gelu_erf, gelu_tanh, silu };

}  // namespace dew
