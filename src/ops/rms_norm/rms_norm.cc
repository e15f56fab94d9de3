// rms_norm and rms_norm_backward: validation, output rules, registries, cases and the public function.
#include "ops/rms_norm/rms_norm.h"

#include <cmath>

namespace dew::ops {
namespace {

DType rstd_dtype(DType x) {
  return x == DType::f64 ? DType::f64 : DType::f32;
}

void check_x_weight(const char* op, const Tensor& x, const Tensor& weight) {
  DEW_REQUIRE(is_floating(x.dtype()) && x.dim() >= 1, "[{}] x is {}; expected a floating tensor (..., C)", op,
              x.describe());
  if (weight.defined())
    DEW_REQUIRE(weight.dim() == 1 && weight.size(0) == x.size(-1) && weight.dtype() == x.dtype(),
                "[{}] weight is {}; expected {}[{}] to match x {}", op, weight.describe(),
                dtype_name(x.dtype()), x.size(-1), x.describe());
}

Shape row_shape(const Tensor& x) {
  return Shape(x.shape().begin(), x.shape().end() - 1);
}

}  // namespace

std::vector<const Tensor*> RmsNormArgs::inputs() const {
  if (weight.defined()) return {&x, &weight};
  return {&x};
}
std::vector<Tensor*> RmsNormArgs::mutable_inputs() {
  if (weight.defined()) return {&x, &weight};
  return {&x};
}
std::vector<const Tensor*> RmsNormBackwardArgs::inputs() const {
  if (weight.defined()) return {&dy, &x, &weight, &rstd};
  return {&dy, &x, &rstd};
}
std::vector<Tensor*> RmsNormBackwardArgs::mutable_inputs() {
  if (weight.defined()) return {&dy, &x, &weight, &rstd};
  return {&dy, &x, &rstd};
}

std::vector<OutputSpec> RmsNorm::infer(const Args& a) {
  require_same_device("rms_norm", a.inputs());
  check_x_weight("rms_norm", a.x, a.weight);
  DEW_REQUIRE(a.eps >= 0 && std::isfinite(a.eps), "[rms_norm] eps is {}; expected a finite eps >= 0", a.eps);
  return {{a.x.shape(), a.dtype()}, {row_shape(a.x), rstd_dtype(a.dtype())}};
}

const select::Registry<RmsNormArgs>& RmsNorm::registry() {
  static const select::Registry<RmsNormArgs> r = [] {
    select::Registry<RmsNormArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_rms_norm_cuda, reg);
    avx512::add_rms_norm_cpu(reg);
    avx2::add_rms_norm_cpu(reg);
    add_rms_norm_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<RmsNormArgs>> RmsNorm::cases(std::string_view) {
  auto make = [](Shape s, bool weight) {
    return [=](DType t, RandomKey k) {
      return RmsNormArgs{random_input(s, t, k, 2.0),
                         weight ? random_input({s.back()}, t, {k.seed, k.stream + 1}) : Tensor(), 1e-6};
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"weighted_768", {"ci"}, all, make({2, 5, 768}, true)},
          {"unweighted_odd", {"ci", "edge"}, all, make({9, 37}, false)},
          // a row's last partial vector with a weight (the FloatVec rows' tail)
          {"weighted_odd", {"ci", "edge"}, all, make({9, 37}, true)},
          {"gpt2_layer", {"bench"}, {DType::f32, DType::bf16, DType::f16}, make({4, 1024, 768}, true)},
          {"llama8b_layer", {"bench"}, {DType::f32, DType::bf16}, make({1, 512, 4096}, true)}};
}

std::vector<OutputSpec> RmsNormBackward::infer(const Args& a) {
  require_same_device("rms_norm_backward", a.inputs());
  check_x_weight("rms_norm_backward", a.x, a.weight);
  DEW_REQUIRE(a.dy.shape() == a.x.shape() && a.dy.dtype() == a.x.dtype(),
              "[rms_norm_backward] dy is {}; expected x's shape and dtype {}", a.dy.describe(),
              a.x.describe());
  DEW_REQUIRE(a.rstd.shape() == row_shape(a.x) && a.rstd.dtype() == rstd_dtype(a.dtype()),
              "[rms_norm_backward] rstd is {}; expected {}{} from rms_norm", a.rstd.describe(),
              dtype_name(rstd_dtype(a.dtype())), shape_str(row_shape(a.x)));
  std::vector<OutputSpec> out{{a.x.shape(), a.dtype()}};
  if (a.weight.defined()) out.push_back({a.weight.shape(), a.dtype()});
  return out;
}

const select::Registry<RmsNormBackwardArgs>& RmsNormBackward::registry() {
  static const select::Registry<RmsNormBackwardArgs> r = [] {
    select::Registry<RmsNormBackwardArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_rms_norm_backward_cuda, reg);
    avx512::add_rms_norm_backward_cpu(reg);
    avx2::add_rms_norm_backward_cpu(reg);
    add_rms_norm_backward_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<RmsNormBackwardArgs>> RmsNormBackward::cases(std::string_view) {
  auto make = [](Shape s, bool weight) {
    return [=](DType t, RandomKey k) {
      RmsNormArgs f{random_input(s, t, k, 2.0),
                    weight ? random_input({s.back()}, t, {k.seed, k.stream + 1}) : Tensor(), 1e-6};
      std::vector<Tensor> fwd = run_op<RmsNorm>(f);
      return RmsNormBackwardArgs{random_input(s, t, {k.seed, k.stream + 2}), f.x, f.weight, fwd[1]};
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"weighted_768", {"ci"}, all, make({2, 50, 768}, true)},
          {"unweighted_odd", {"ci", "edge"}, all, make({9, 37}, false)},
          {"weighted_odd", {"ci", "edge"}, all, make({9, 37}, true)},  // the FloatVec rows' tail, weighted
          {"gpt2_layer", {"bench"}, {DType::f32, DType::bf16, DType::f16}, make({4, 1024, 768}, true)}};
}

}  // namespace dew::ops

namespace dew {
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  return ops::run_op<ops::RmsNorm>(ops::RmsNormArgs{x, weight, eps})[0];
}
}  // namespace dew
