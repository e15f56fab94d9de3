// where: the output rule, the registry, the cases and the public function.
#include "ops/where/where.h"

namespace dew::ops {
std::vector<OutputSpec> Where::infer(const Args& a) {
  require_same_device("where", a.inputs());
  DEW_REQUIRE(a.condition.dtype() == DType::boolean, "[where] condition is {}; expected a bool tensor",
              a.condition.describe());
  DEW_REQUIRE(a.a.dtype() == a.b.dtype(), "[where] a is {} and b is {}; expected one dtype", a.a.describe(),
              a.b.describe());
  Shape s =
      broadcast_shapes(broadcast_shapes(a.condition.shape(), a.a.shape(), "where"), a.b.shape(), "where");
  return {{s, a.dtype()}};
}

const select::Registry<WhereArgs>& Where::registry() {
  static const select::Registry<WhereArgs> r = [] {
    select::Registry<WhereArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_where_cuda, reg);
    add_where_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<WhereArgs>> Where::cases(std::string_view) {
  auto make = [](Shape sc, Shape sa, Shape sb) {
    return [=](DType t, RandomKey k) {
      Tensor cond = Tensor::empty(sc, DType::boolean);
      fill_bernoulli(cond, {k.seed, k.stream + 9, 0}, 0.5);
      return WhereArgs{cond, random_input(sa, t, k), random_input(sb, t, {k.seed, k.stream + 1})};
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"same_shape", {"ci"}, all, make({9, 40}, {9, 40}, {9, 40})},
          {"broadcast", {"ci", "edge"}, all, make({5, 1}, {1, 7}, {5, 7})}};
}

}  // namespace dew::ops

namespace dew {
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return ops::run_op<ops::Where>(ops::WhereArgs{condition, a, b})[0];
}
}  // namespace dew
