// The binary functions' names as an enum: the vocabulary shared by the op (binary.h) and the scalar
// mathematics (scalar.h) that host and device kernels both compile.
#pragma once

#include <cstdint>

namespace dew::ops {

enum class BinaryFn : uint8_t { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge };

inline bool is_comparison(BinaryFn f) {
  return f >= BinaryFn::eq;
}

}  // namespace dew::ops
