// rms_norm and rms_norm_backward: validation, output rules, float64 references with error
// magnitudes, registries, cases and the public function.
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

std::vector<Truth> RmsNorm::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): sum of C squares (relative gamma_C), a sqrt, a division and
  // two products: relative to |y| and to rstd.
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  std::vector<double> x = a.x.to_f64_vector(),
                      w = a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>();
  std::vector<double> y(x.size()), my(x.size()), rstd(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {  // rows
    double ss = 0;
    for (int64_t i = 0; i < C; ++i) ss += x[size_t(r * C + i)] * x[size_t(r * C + i)];
    rstd[size_t(r)] = 1.0 / std::sqrt(ss / double(C) + a.eps);
    for (int64_t i = 0; i < C; ++i) {  // channels
      size_t k = size_t(r * C + i);
      y[k] = x[k] * rstd[size_t(r)] * (w.empty() ? 1.0 : w[size_t(i)]);
      my[k] = std::fabs(y[k]);
    }
  }
  Shape rs = row_shape(a.x);
  return {{Tensor::from_values(y, a.x.shape(), DType::f64), Tensor::from_values(my, a.x.shape(), DType::f64),
           C + 6},
          {Tensor::from_values(rstd, rs, DType::f64), Tensor::from_values(rstd, rs, DType::f64), C + 4}};
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

std::vector<Truth> RmsNormBackward::reference(const Args& a) {
  // dx = rstd (g - x rstd^2 mean(g x)), g = dy w; dw = sum_rows dy x rstd. Magnitudes: the absolute
  // terms of each sum (NOTE [certified bound]).
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  auto x = a.x.to_f64_vector(), dy = a.dy.to_f64_vector(), rstd = a.rstd.to_f64_vector();
  auto w = a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>(size_t(C), 1.0);
  std::vector<double> dx(x.size()), mdx(x.size()), dw(size_t(C), 0.0), mdw(size_t(C), 0.0);
  for (int64_t r = 0; r < rows; ++r) {  // rows
    double r_ = rstd[size_t(r)], s = 0, s_abs = 0;
    for (int64_t i = 0; i < C; ++i) {
      size_t k = size_t(r * C + i);
      s += dy[k] * w[size_t(i)] * x[k];
      s_abs += std::fabs(dy[k] * w[size_t(i)] * x[k]);
    }
    for (int64_t i = 0; i < C; ++i) {  // channels
      size_t k = size_t(r * C + i);
      double g = dy[k] * w[size_t(i)];
      dx[k] = r_ * (g - x[k] * r_ * r_ * s / double(C));
      mdx[k] = r_ * (std::fabs(g) + std::fabs(x[k]) * r_ * r_ * s_abs / double(C));
      dw[size_t(i)] += dy[k] * x[k] * r_;
      mdw[size_t(i)] += std::fabs(dy[k] * x[k] * r_);
    }
  }
  std::vector<Truth> out{{Tensor::from_values(dx, a.x.shape(), DType::f64),
                          Tensor::from_values(mdx, a.x.shape(), DType::f64), C + 8}};
  if (a.weight.defined())
    out.push_back(
        {Tensor::from_values(dw, {C}, DType::f64), Tensor::from_values(mdw, {C}, DType::f64), rows + 4});
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
