// softmax, log_softmax and cumsum: output rules, the registry, cases and public functions.
#include "ops/along_axis/along_axis.h"

#include <cmath>
#include <limits>

#include "ops/rows.h"

namespace dew::ops {

std::string_view AlongAxis::name(const Args& a) {
  switch (a.fn) {
    case AlongAxisFn::softmax:
      return "softmax";
    case AlongAxisFn::log_softmax:
      return "log_softmax";
    case AlongAxisFn::cumsum:
      return "cumsum";
  }
  return "?";
}

std::vector<OutputSpec> AlongAxis::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()), "[{}] x is {}; expected a floating dtype", op, a.x.describe());
  normalize_axis(a.axis, a.x.dim(), op);
  return {{a.x.shape(), a.dtype()}};
}

const select::Registry<AlongAxisArgs>& AlongAxis::registry() {
  static const select::Registry<AlongAxisArgs> r = [] {
    select::Registry<AlongAxisArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_along_axis_cuda, reg);
    avx512::add_along_axis_cpu(reg);
    avx2::add_along_axis_cpu(reg);
    add_along_axis_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<AlongAxisArgs>> AlongAxis::cases(std::string_view op) {
  AlongAxisFn fn = op == "softmax"       ? AlongAxisFn::softmax
                   : op == "log_softmax" ? AlongAxisFn::log_softmax
                                         : AlongAxisFn::cumsum;
  auto make = [fn](Shape s, int64_t axis, double scale) {
    return [=](DType t, RandomKey k) { return AlongAxisArgs{random_input(s, t, k, scale), axis, fn}; };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"last_axis", {"ci"}, all, make({6, 500}, -1, 3.0)},
          {"first_axis", {"ci", "edge"}, all, make({50, 3, 4}, 0, 3.0)},
          {"large_logits", {"ci", "edge"}, all, make({64, 300}, 1, 40.0)},
          {"attention_scores", {"bench"}, {DType::f32, DType::f16}, make({48, 1024, 1024}, -1, 3.0)}};
}

}  // namespace dew::ops

namespace dew {
Tensor softmax(const Tensor& x, int64_t axis) {
  return ops::run_op<ops::AlongAxis>(ops::AlongAxisArgs{x, axis, ops::AlongAxisFn::softmax})[0];
}
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return ops::run_op<ops::AlongAxis>(ops::AlongAxisArgs{x, axis, ops::AlongAxisFn::log_softmax})[0];
}
Tensor cumsum(const Tensor& x, int64_t axis) {
  return ops::run_op<ops::AlongAxis>(ops::AlongAxisArgs{x, axis, ops::AlongAxisFn::cumsum})[0];
}
}  // namespace dew
