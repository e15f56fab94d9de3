// The reductions' names as an enum: shared by the op (reduce.h) and its CUDA kernels.
#pragma once

#include <cstdint>

namespace dew::ops {

enum class ReduceFn : uint8_t { sum, mean, max, min, logsumexp, argmax };

}  // namespace dew::ops
