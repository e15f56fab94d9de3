// where(condition, a, b): the gradient goes to the chosen side; the condition has none.
#include "ops/rules_common.h"
#include "ops/where/where.h"

namespace dew::ops {

Differentiation Where::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Where::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Where::vjp(const Args& args) {
  const SavedTensor condition(args.condition, "where");
  const Shape a_shape = args.a.shape(), b_shape = args.b.shape();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor zero = scalar_like(0, d[0]);
    return {Tensor(), sum_to_shape(where(condition.get(), d[0], zero), a_shape),
            sum_to_shape(where(condition.get(), zero, d[0]), b_shape)};
  };
}

std::vector<Tensor> Where::jvp(const Args& args, const std::vector<Tensor>& outs,
                               const std::vector<Tensor>& t) {
  const Tensor zero = scalar_like(0, outs[0]);
  if (!t[1].defined() && !t[2].defined()) return {Tensor()};
  return {where(args.condition, t[1].defined() ? t[1] : zero, t[2].defined() ? t[2] : zero)};
}

}  // namespace dew::ops
