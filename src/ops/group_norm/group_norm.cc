// group_norm: validation, output rules, registry, cases and the public function.
#include "ops/group_norm/group_norm.h"

#include <cmath>

namespace dew::ops {

std::vector<const Tensor*> GroupNormArgs::inputs() const {
  std::vector<const Tensor*> v;
  for (const Tensor* t : {&x, &weight, &bias})
    if (t->defined()) v.push_back(t);
  return v;
}
std::vector<Tensor*> GroupNormArgs::mutable_inputs() {
  std::vector<Tensor*> v;
  for (Tensor* t : {&x, &weight, &bias})
    if (t->defined()) v.push_back(t);
  return v;
}

std::vector<OutputSpec> GroupNorm::infer(const Args& a) {
  require_same_device("group_norm", a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()) && a.x.dim() >= 2, "[group_norm] x is {}; expected a floating (B,C,...)",
              a.x.describe());
  const int64_t C = a.x.size(1);
  DEW_REQUIRE(a.groups >= 1 && C % a.groups == 0,
              "[group_norm] {} groups over {} channels; expected a divisor of {}", a.groups, C, C);
  for (const Tensor* t : {&a.weight, &a.bias})
    if (t->defined())
      DEW_REQUIRE(t->shape() == Shape({C}) && t->dtype() == a.dtype(),
                  "[group_norm] weight/bias is {}; expected {}[{}]", t->describe(), dtype_name(a.dtype()), C);
  DEW_REQUIRE(a.eps >= 0 && std::isfinite(a.eps), "[group_norm] eps is {}; expected a finite eps >= 0",
              a.eps);
  const DType stat = a.dtype() == DType::f64 ? DType::f64 : DType::f32;
  return {{a.x.shape(), a.dtype()}, {{a.x.size(0), a.groups}, stat}, {{a.x.size(0), a.groups}, stat}};
}

const select::Registry<GroupNormArgs>& GroupNorm::registry() {
  static const select::Registry<GroupNormArgs> r = [] {
    select::Registry<GroupNormArgs> reg;
    avx512::add_group_norm_cpu(reg);
    avx2::add_group_norm_cpu(reg);
    add_group_norm_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<GroupNormArgs>> GroupNorm::cases(std::string_view) {
  auto make = [](Shape s, int64_t groups, bool affine) {
    return [=](DType t, RandomKey k) {
      GroupNormArgs a;
      a.x = random_input(s, t, k, 2.0), a.groups = groups;
      if (affine) {
        a.weight = random_input({s[1]}, t, {k.seed, k.stream + 1});
        a.bias = random_input({s[1]}, t, {k.seed, k.stream + 2});
      }
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"unet_block", {"ci"}, all, make({2, 8, 5, 5}, 4, true)},
          {"plain_one_group", {"ci", "edge"}, all, make({3, 6, 3, 2}, 1, false)},
          {"instance_norm", {"ci", "edge"}, all, make({2, 3, 4, 3}, 3, true)},
          {"tokens", {"ci", "edge"}, all, make({2, 6, 7}, 2, true)},
          {"unet_28", {"bench"}, {DType::f32, DType::bf16}, make({64, 64, 28, 28}, 32, true)}};
}

}  // namespace dew::ops

namespace dew {

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps) {
  ops::GroupNormArgs a;
  a.x = x, a.weight = weight, a.bias = bias, a.groups = groups, a.eps = eps;
  return ops::run_op<ops::GroupNorm>(a)[0];
}

}  // namespace dew
