// Shared helpers of the op framework: random gate inputs, device checks, axis lists and row order.
#include "ops/op.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/strided.h"
#include "ops/rows.h"

namespace dew::ops {

Tensor random_input(const Shape& shape, DType dtype, RandomKey key, double scale) {
  Tensor draws = Tensor::empty(shape, DType::f64);
  fill_normal(draws, key, 0.0, 1.0);
  std::vector<double> v = draws.to_f64_vector();
  for (double& x : v) x = scale * std::copysign(0.05 + std::fabs(x), x);
  return Tensor::from_values(v, shape, dtype);
}

void refuse_derivative_without_rules(std::string_view op, const std::vector<const Tensor*>& inputs) {
  for (const Tensor* t : inputs)
    DEW_REQUIRE(!differentiated({t}),
                "[{}] has no differentiation rules yet, and input {} needs a derivative; run it under "
                "NoGrad or on detach()ed inputs",
                op, t->describe());
}

void require_same_device(const char* op, const std::vector<const Tensor*>& inputs) {
  for (const Tensor* t : inputs) {
    DEW_REQUIRE(t->defined(), "[{}] an input is an undefined tensor; expected a tensor", op);
    DEW_REQUIRE(t->device() == inputs[0]->device(),
                "[{}] inputs are on two devices, {} and {}; move them with to(device) first", op,
                inputs[0]->device().str(), t->device().str());
  }
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const char* op) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    out.resize(size_t(rank));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, rank, op));
  std::sort(out.begin(), out.end());
  DEW_REQUIRE(std::adjacent_find(out.begin(), out.end()) == out.end(),
              "[{}] axes [{}] repeat an axis; expected distinct axes", op, fmt::join(axes, ","));
  return out;
}

void restore_order(const Tensor& y, const std::vector<int64_t>& order, Tensor& out) {
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[size_t(order[i])] = int64_t(i);
  detail::copy_strided(y.permute(inverse), out);
}

}  // namespace dew::ops
