// Helpers the ops' differentiation rules (rules.cc) share, written with ops.
#pragma once

#include <dew/ops.h>

#include <vector>

namespace dew::ops {

// g summed over the dims a broadcast added or stretched to reach g's shape from `shape`: the vjp of
// broadcasting (numpy rules), so an input's gradient has the input's shape.
Tensor sum_to_shape(const Tensor& g, const Shape& shape);
// A 0-dim tensor of value in like's dtype (broadcasts against anything).
Tensor scalar_like(double value, const Tensor& like);
// a + b where either may be undefined (a zero): the sum of partial tangents.
Tensor add_defined(const Tensor& a, const Tensor& b);
// g (the reduced shape, keepdim or not) broadcast back over `axes` of `shape`.
Tensor unreduce(const Tensor& g, const Shape& shape, const std::vector<int64_t>& axes, bool keepdim);
// Every dim of x but the last: a per-channel sum over rows (a norm's weight gradient).
std::vector<int64_t> row_axes(const Tensor& x);
Tensor cube(const Tensor& t);  // t^3

}  // namespace dew::ops
