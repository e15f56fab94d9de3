// group_norm_backward: validation, output rules, registry, cases and the function group_norm's vjp calls.
#include "ops/group_norm/group_norm.h"

namespace dew::ops {

std::vector<Tensor> group_norm_backward_composite(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                  const Tensor& mean, const Tensor& rstd);  // rules.cc

std::vector<const Tensor*> GroupNormBackwardArgs::inputs() const {
  std::vector<const Tensor*> v;
  for (const Tensor* t : {&dy, &x, &weight, &mean, &rstd})
    if (t->defined()) v.push_back(t);
  return v;
}
std::vector<Tensor*> GroupNormBackwardArgs::mutable_inputs() {
  std::vector<Tensor*> v;
  for (Tensor* t : {&dy, &x, &weight, &mean, &rstd})
    if (t->defined()) v.push_back(t);
  return v;
}

std::vector<OutputSpec> GroupNormBackward::infer(const Args& a) {
  require_same_device("group_norm_backward", a.inputs());
  GroupNormArgs forward;
  forward.x = a.x, forward.weight = a.weight, forward.groups = a.groups;
  const std::vector<OutputSpec> f = GroupNorm::infer(forward);  // x, weight and groups checked as forward's
  DEW_REQUIRE(a.dy.shape() == a.x.shape() && a.dy.dtype() == a.dtype(),
              "[group_norm_backward] dy is {}; expected x's shape and dtype {}", a.dy.describe(),
              a.x.describe());
  for (const Tensor* t : {&a.mean, &a.rstd})
    DEW_REQUIRE(t->shape() == f[1].shape && t->dtype() == f[1].dtype,
                "[group_norm_backward] mean/rstd is {}; expected {}{} from group_norm", t->describe(),
                dtype_name(f[1].dtype), shape_str(f[1].shape));
  std::vector<OutputSpec> out{{a.x.shape(), a.dtype()}};
  if (a.weight.defined())
    out.push_back({{a.x.size(1)}, a.dtype()}), out.push_back({{a.x.size(1)}, a.dtype()});
  return out;
}

const select::Registry<GroupNormBackwardArgs>& GroupNormBackward::registry() {
  static const select::Registry<GroupNormBackwardArgs> r = [] {
    select::Registry<GroupNormBackwardArgs> reg;
    avx512::add_group_norm_backward_cpu(reg);
    avx2::add_group_norm_backward_cpu(reg);
    add_group_norm_backward_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<GroupNormBackwardArgs>> GroupNormBackward::cases(std::string_view) {
  std::vector<Case<GroupNormBackwardArgs>> out;
  for (const Case<GroupNormArgs>& c : GroupNorm::cases("group_norm"))
    out.push_back({c.name, c.tags, c.dtypes, [make = c.make](DType t, RandomKey k) {
                     const GroupNormArgs f = make(t, k);
                     const std::vector<Tensor> stats = run_op<GroupNorm>(f);
                     return GroupNormBackwardArgs{random_input(f.x.shape(), t, {k.seed, k.stream + 3}),
                                                  f.x,
                                                  f.weight,
                                                  stats[1],
                                                  stats[2],
                                                  f.groups};
                   }});
  return out;
}

std::vector<Tensor> group_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                        const Tensor& mean, const Tensor& rstd, int64_t groups) {
  const GroupNormBackwardArgs args{dy, x, weight, mean, rstd, groups};
  if (!differentiated(args.inputs())) return run_op<GroupNormBackward>(args);
  GroupNormBackward::infer(args);
  return group_norm_backward_composite(dy, x, weight, mean, rstd);
}

}  // namespace dew::ops
