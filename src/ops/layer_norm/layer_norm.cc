// layer_norm and layer_norm_backward: validation, output rules, float64 references with error
// magnitudes, registry, cases and the public functions.
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

std::vector<Truth> LayerNorm::reference(const Args& a) {
  // Magnitudes (NOTE [certified bound]): the mean's error (gamma_C mean|x|) shifts every centered
  // value, so each term carries (|x - mean| + mean|x|) rstd; sums over C or rows carry their |terms|.
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  auto x = a.x.to_f64_vector();
  auto w = a.weight.defined() ? a.weight.to_f64_vector() : std::vector<double>(size_t(C), 1.0);
  auto b = a.bias.defined() ? a.bias.to_f64_vector() : std::vector<double>(size_t(C), 0.0);
  Shape rs = rows_of(a.x);
  if (!a.backward) {
    std::vector<double> y(x.size()), my(x.size()), mean(static_cast<size_t>(rows)), mmean(mean.size()),
        rstd(mean.size());
    for (int64_t r = 0; r < rows; ++r) {  // rows
      const double* xr = x.data() + r * C;
      double mu = 0, abs_mean = 0, var = 0;
      for (int64_t i = 0; i < C; ++i) mu += xr[i], abs_mean += std::fabs(xr[i]);
      mu /= double(C);
      abs_mean /= double(C);
      for (int64_t i = 0; i < C; ++i) var += (xr[i] - mu) * (xr[i] - mu);
      const double rr = 1.0 / std::sqrt(var / double(C) + a.eps);
      mean[size_t(r)] = mu, mmean[size_t(r)] = abs_mean, rstd[size_t(r)] = rr;
      for (int64_t i = 0; i < C; ++i) {  // channels
        y[size_t(r * C + i)] = (xr[i] - mu) * rr * w[size_t(i)] + b[size_t(i)];
        my[size_t(r * C + i)] =
            (std::fabs(xr[i] - mu) + abs_mean) * rr * std::fabs(w[size_t(i)]) + std::fabs(b[size_t(i)]);
      }
    }
    return {{Tensor::from_values(y, a.x.shape(), DType::f64),
             Tensor::from_values(my, a.x.shape(), DType::f64), C + 8},
            {Tensor::from_values(mean, rs, DType::f64), Tensor::from_values(mmean, rs, DType::f64), C + 1},
            {Tensor::from_values(rstd, rs, DType::f64), Tensor::from_values(rstd, rs, DType::f64), C + 6}};
  }
  auto dy = a.dy.to_f64_vector(), mean = a.mean.to_f64_vector(), rstd = a.rstd.to_f64_vector();
  std::vector<double> dx(x.size()), mdx(x.size()), dw(size_t(C), 0), mdw(size_t(C), 0), db(size_t(C), 0),
      mdb(size_t(C), 0);
  for (int64_t r = 0; r < rows; ++r) {  // rows
    const double mu = mean[size_t(r)], rr = rstd[size_t(r)];
    double mg = 0, mgx = 0, amg = 0, amgx = 0, abs_mean = 0;
    for (int64_t i = 0; i < C; ++i) {
      size_t k = size_t(r * C + i);
      const double g = dy[k] * w[size_t(i)], xh = (x[k] - mu) * rr;
      mg += g, mgx += g * xh, amg += std::fabs(g), amgx += std::fabs(g * xh), abs_mean += std::fabs(x[k]);
    }
    mg /= double(C), mgx /= double(C), amg /= double(C), amgx /= double(C), abs_mean /= double(C);
    const double shift = 1 + (abs_mean + std::fabs(mu)) * rr;  // the centered value's rounding, relative
    for (int64_t i = 0; i < C; ++i) {                          // channels
      size_t k = size_t(r * C + i);
      const double g = dy[k] * w[size_t(i)], xh = (x[k] - mu) * rr;
      dx[k] = rr * (g - mg - xh * mgx);
      mdx[k] = rr * (std::fabs(g) + amg + std::fabs(xh) * amgx) * shift;
      dw[size_t(i)] += dy[k] * xh, mdw[size_t(i)] += std::fabs(dy[k] * xh) * shift;
      db[size_t(i)] += dy[k], mdb[size_t(i)] += std::fabs(dy[k]);
    }
  }
  std::vector<Truth> out{{Tensor::from_values(dx, a.x.shape(), DType::f64),
                          Tensor::from_values(mdx, a.x.shape(), DType::f64), 2 * C + 10}};
  if (a.weight.defined()) {
    out.push_back(
        {Tensor::from_values(dw, {C}, DType::f64), Tensor::from_values(mdw, {C}, DType::f64), rows + 8});
    out.push_back(
        {Tensor::from_values(db, {C}, DType::f64), Tensor::from_values(mdb, {C}, DType::f64), rows + 2});
  }
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
