// layer_norm and layer_norm_backward: validation, output rules, registries, cases and the public
// functions.
#include "ops/layer_norm/layer_norm.h"

#include <cmath>

namespace dew::ops {
namespace {

DType stat_dtype(DType x) {
  return x == DType::f64 ? DType::f64 : DType::f32;
}
Shape rows_of(const Tensor& x) {
  return Shape(x.shape().begin(), x.shape().end() - 1);
}

}  // namespace

std::vector<const Tensor*> LayerNormArgs::inputs() const {
  std::vector<const Tensor*> v;
  for (const Tensor* t : {&dy, &x, &weight, &bias, &mean, &rstd})
    if (t->defined()) v.push_back(t);
  return v;
}
std::vector<Tensor*> LayerNormArgs::mutable_inputs() {
  std::vector<Tensor*> v;
  for (Tensor* t : {&dy, &x, &weight, &bias, &mean, &rstd})
    if (t->defined()) v.push_back(t);
  return v;
}

std::vector<OutputSpec> LayerNorm::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()) && a.x.dim() >= 1, "[{}] x is {}; expected a floating tensor (..., C)",
              op, a.x.describe());
  const int64_t C = a.x.size(-1);
  for (const Tensor* t : {&a.weight, &a.bias})
    if (t->defined())
      DEW_REQUIRE(t->shape() == Shape({C}) && t->dtype() == a.dtype(),
                  "[{}] weight/bias is {}; expected {}[{}]", op, t->describe(), dtype_name(a.dtype()), C);
  DEW_REQUIRE(a.eps >= 0 && std::isfinite(a.eps), "[{}] eps is {}; expected a finite eps >= 0", op, a.eps);
  if (!a.backward)
    return {{a.x.shape(), a.dtype()},
            {rows_of(a.x), stat_dtype(a.dtype())},
            {rows_of(a.x), stat_dtype(a.dtype())}};
  DEW_REQUIRE(a.dy.shape() == a.x.shape() && a.dy.dtype() == a.dtype(),
              "[{}] dy is {}; expected x's shape and dtype {}", op, a.dy.describe(), a.x.describe());
  for (const Tensor* t : {&a.mean, &a.rstd})
    DEW_REQUIRE(t->shape() == rows_of(a.x) && t->dtype() == stat_dtype(a.dtype()),
                "[{}] mean/rstd is {}; expected {}{} from layer_norm", op, t->describe(),
                dtype_name(stat_dtype(a.dtype())), shape_str(rows_of(a.x)));
  std::vector<OutputSpec> out{{a.x.shape(), a.dtype()}};
  if (a.weight.defined()) out.push_back({{C}, a.dtype()}), out.push_back({{C}, a.dtype()});
  return out;
}

const select::Registry<LayerNormArgs>& LayerNorm::registry() {
  static const select::Registry<LayerNormArgs> r = [] {
    select::Registry<LayerNormArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_layer_norm_cuda, reg);
    avx512::add_layer_norm_cpu(reg);
    avx2::add_layer_norm_cpu(reg);
    add_layer_norm_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<LayerNormArgs>> LayerNorm::cases(std::string_view op) {
  const bool backward = op == "layer_norm_backward";
  auto make = [=](Shape s, bool affine) {
    return [=](DType t, RandomKey k) {
      LayerNormArgs a;
      a.x = random_input(s, t, k, 2.0);
      if (affine) {
        a.weight = random_input({s.back()}, t, {k.seed, k.stream + 1});
        a.bias = random_input({s.back()}, t, {k.seed, k.stream + 2});
      }
      if (!backward) return a;
      std::vector<Tensor> fwd = run_op<LayerNorm>(a);
      a.bias = Tensor();
      a.dy = random_input(s, t, {k.seed, k.stream + 3});
      a.mean = fwd[1];
      a.rstd = fwd[2];
      a.backward = true;
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"affine_768", {"ci"}, all, make({2, 50, 768}, true)},
          {"plain_odd", {"ci", "edge"}, all, make({9, 37}, false)},
          // a row's last partial group of 16 channels with a weight (the FloatVec rows' masked tail)
          {"affine_odd", {"ci", "edge"}, all, make({70, 101}, true)},
          {"gpt2_layer", {"bench"}, {DType::f32, DType::bf16, DType::f16}, make({4, 1024, 768}, true)}};
}

}  // namespace dew::ops

namespace dew {

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  ops::LayerNormArgs a;
  a.x = x, a.weight = weight, a.bias = bias, a.eps = eps;
  auto outs = ops::run_op<ops::LayerNorm>(a);
  return {outs[0], outs[1], outs[2]};
}

LayerNormGradients layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                       const LayerNormResult& forward) {
  ops::LayerNormArgs a;
  a.dy = dy, a.x = x, a.weight = weight, a.mean = forward.mean, a.rstd = forward.rstd, a.backward = true;
  auto outs = ops::run_op<ops::LayerNorm>(a);
  return {outs[0], outs.size() > 1 ? outs[1] : Tensor(), outs.size() > 2 ? outs[2] : Tensor()};
}

}  // namespace dew
