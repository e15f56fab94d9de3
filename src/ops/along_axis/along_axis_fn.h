// The along-axis functions' names as an enum: shared by the op (softmax.h) and its CUDA kernels.
#pragma once

#include <cstdint>

namespace dew::ops {

enum class AlongAxisFn : uint8_t { softmax, log_softmax, cumsum };

}  // namespace dew::ops
