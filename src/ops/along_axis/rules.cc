// softmax, log_softmax and cumsum: vjp and jvp. cumsum's vjp is the reverse cumsum, flip(cumsum(flip
// g)): written as sum - cumsum + g it cancels near the row's end, and exactly only where cumsum adds in
// sum's order (the serial portable path, not the tiers' vectors of prefix sums).
#include "ops/along_axis/along_axis.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

// g with its axis reversed.
Tensor flip(const Tensor& g, int64_t axis) {
  const int64_t n = g.size(axis);
  return index_select(g, axis, arange(double(n - 1), -1.0, -1.0, DType::i64).to(g.device()));
}

// The output's tangent from the input's tangent t (y is the output).
Tensor along_axis_tangent(AlongAxisFn f, int64_t axis, const Tensor& t, const Tensor& y) {
  switch (f) {
    case AlongAxisFn::softmax:  // y (t - <t, y>)
      return mul(y, sub(t, sum(mul(t, y), {axis}, true)));
    case AlongAxisFn::log_softmax:  // t - <t, softmax>
      return sub(t, sum(mul(t, exp(y)), {axis}, true));
    case AlongAxisFn::cumsum:
      return cumsum(t, axis);
  }
  return Tensor();
}

}  // namespace

Differentiation AlongAxis::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> AlongAxis::vjp_reads_outputs(const Args& a) {
  return {a.fn != AlongAxisFn::cumsum};
}

VjpRule AlongAxis::vjp(const Args& a) {
  const AlongAxisFn f = a.fn;
  const int64_t axis = a.axis;
  return [f, axis](const std::vector<Tensor>& d, const std::vector<Tensor>& y) -> std::vector<Tensor> {
    const Tensor& g = d[0];
    switch (f) {
      case AlongAxisFn::softmax:  // y (g - <g, y>)
        return {mul(y[0], sub(g, sum(mul(g, y[0]), {axis}, true)))};
      case AlongAxisFn::log_softmax:  // g - softmax <g, 1>
        return {sub(g, mul(exp(y[0]), sum(g, {axis}, true)))};
      case AlongAxisFn::cumsum:  // reverse cumsum
        return {flip(cumsum(flip(g, axis), axis), axis)};
    }
    return {Tensor()};
  };
}

std::vector<Tensor> AlongAxis::jvp(const Args& a, const std::vector<Tensor>& outs,
                                   const std::vector<Tensor>& t) {
  return {along_axis_tangent(a.fn, a.axis, t[0], outs[0])};
}

}  // namespace dew::ops
