// Optimizers against PyTorch (tools/torch_reference/make_optimizer_fixtures.py): Dew's float32
// updates are judged as the gate judges, by their error against PyTorch's float64 result within 1.5x
// PyTorch's own float32 error; Lion against a float64 recomputation with a rounding bound; schedules at
// the points that define them; clipping against torch.nn.utils.clip_grad_norm_.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/safetensors.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "error_of.h"

namespace dew::train {
namespace {

const SafetensorsFile& fixture() {
  static const SafetensorsFile f =
      SafetensorsFile::open(std::string(DEW_SOURCE_DIR) + "/tests/train/fixtures/optimizers.safetensors");
  return f;
}
const char* kNames[] = {"w", "b", "e"};
const double kLrs[] = {1e-2, 3e-2, 2e-2, 5e-3};

double rms_error(const Tensor& a, const Tensor& truth) {
  const std::vector<double> x = a.to_f64_vector(), t = truth.to_f64_vector();
  double s = 0;
  for (size_t i = 0; i < t.size(); ++i) s += (x[i] - t[i]) * (x[i] - t[i]);
  return std::sqrt(s / double(t.size()));
}

std::vector<Param> fresh_params(double weight_decay) {
  std::vector<Param> params;
  for (const char* n : kNames) {
    Tensor t = fixture().load(std::string("param.") + n);
    t.requires_grad_();
    params.push_back({n, t, 1.0, weight_decay});
  }
  return params;
}

// The fixture's gradients of step `step` (by position: w, b, e), times `scale`.
void set_grads(std::vector<Param>& params, int step, double scale = 1) {
  for (size_t i = 0; i < params.size(); ++i) {
    Param& p = params[i];
    Tensor g = fixture().load("grad" + std::to_string(step) + "." + kNames[i]);
    if (scale != 1) {
      for (int64_t i = 0; i < g.numel(); ++i) g.data<float>()[i] *= float(scale);
    }
    p.tensor.zero_grad();
    backward(sum(mul(p.tensor, g)));  // d/dp sum(p * g) = g, exactly
  }
}

void expect_as_exact_as_torch(const std::string& name, std::unique_ptr<Optimizer> optimizer,
                              std::vector<Param>& params) {
  for (int step = 0; step < 4; ++step) {
    set_grads(params, step);
    optimizer->step(kLrs[step]);
    for (const Param& p : params) {
      const std::string key = "." + p.name + ".step" + std::to_string(step);
      const Tensor truth = fixture().load(name + ".f64" + key), torch32 = fixture().load(name + ".f32" + key);
      const double ours = rms_error(p.tensor, truth), theirs = rms_error(torch32, truth);
      EXPECT_LE(ours, 1.5 * theirs) << name << " " << p.name << " step " << step << ": Dew's float32 error "
                                    << ours << ", PyTorch's " << theirs;
    }
  }
}

TEST(Optimizers, AdamWMatchesTorchOptimAdamW) {
  std::vector<Param> params = fresh_params(0.1);
  expect_as_exact_as_torch("adamw", make_adamw(params, {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8}), params);
}

TEST(Optimizers, SgdWithMomentumAndNesterovMatchTorchOptimSgd) {
  std::vector<Param> params = fresh_params(0.01);
  expect_as_exact_as_torch("sgd", make_sgd(params, {.momentum = 0.9}), params);
  std::vector<Param> nesterov = fresh_params(0.01);
  expect_as_exact_as_torch("nesterov", make_sgd(nesterov, {.momentum = 0.9, .nesterov = true}), nesterov);
}

TEST(Optimizers, LionIsItsFormulaInFloat64WithinRounding) {
  std::vector<Param> params = fresh_params(0.1);
  auto lion = make_lion(params);
  std::vector<std::vector<double>> p, m;
  for (const Param& q : params) {
    p.push_back(q.tensor.to_f64_vector());
    m.emplace_back(p.back().size(), 0.0);
  }
  for (int step = 0; step < 4; ++step) {
    set_grads(params, step);
    lion->step(kLrs[step]);
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor g = params[i].tensor.grad();
      for (size_t k = 0; k < p[i].size(); ++k) {
        const double gk = g.data<float>()[k], c = 0.9 * m[i][k] + 0.1 * gk;
        p[i][k] = p[i][k] * (1 - kLrs[step] * 0.1) - kLrs[step] * double((c > 0) - (c < 0));
        m[i][k] = 0.99 * m[i][k] + 0.01 * gk;
        // A step rounds float(1 - lr wd) and p times it (2u|p|), float(lr) (u lr) and the difference
        // (u(|p| + lr)): at most 3u(|p| + lr), and earlier steps' errors carry over scaled by < 1.
        const double bound = 3 * 0x1p-24 * (step + 1) * (std::abs(p[i][k]) + kLrs[step]);
        ASSERT_LE(std::abs(double(params[i].tensor.data<float>()[k]) - p[i][k]), bound)
            << params[i].name << "[" << k << "] step " << step;
      }
    }
  }
}

// Muon on a (rows, cols) matrix, plainly, at precision T: momentum (Nesterov), five quintic
// Newton-Schulz steps on the wide side, Moonlight's scale, decoupled decay.
template <class T>
struct PlainMuon {
  int64_t rows, cols;
  std::vector<T> p, buf;
  static std::vector<T> product(const std::vector<T>& a, const std::vector<T>& b, int64_t n, int64_t k,
                                int64_t m,
                                bool transpose_b) {  // (n, k) x (k, m), or x (m, k)ᵀ
    std::vector<T> c(size_t(n * m), T(0));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        T s = 0;
        for (int64_t l = 0; l < k; ++l)
          s += a[size_t(i * k + l)] * (transpose_b ? b[size_t(j * k + l)] : b[size_t(l * m + j)]);
        c[size_t(i * m + j)] = s;
      }
    return c;
  }
  void step(const std::vector<float>& g, double lr, double wd) {
    std::vector<T> u(p.size());
    for (size_t k = 0; k < p.size(); ++k)
      buf[k] = T(0.95) * buf[k] + T(g[k]), u[k] = T(g[k]) + T(0.95) * buf[k];
    const bool tall = rows > cols;
    const int64_t r = tall ? cols : rows, c = tall ? rows : cols;
    std::vector<T> x(u.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        x[size_t(tall ? j * rows + i : i * cols + j)] = u[size_t(i * cols + j)];
    double squares = 0;
    for (T v : x) squares += double(v) * double(v);
    const T inverse = T(1 / (std::sqrt(squares) + 1e-7));
    for (T& v : x) v *= inverse;
    for (int s = 0; s < 5; ++s) {
      const std::vector<T> a = product(x, x, r, c, r, true);
      std::vector<T> b = product(a, a, r, r, r, false);
      for (size_t k = 0; k < b.size(); ++k) b[k] = T(-4.7750f) * a[k] + T(2.0315f) * b[k];
      std::vector<T> bx = product(b, x, r, r, c, false);
      for (size_t k = 0; k < bx.size(); ++k) x[k] = T(3.4445f) * x[k] + bx[k];
    }
    const T scale = T(lr * 0.2 * std::sqrt(double(std::max(rows, cols)))), decay = T(1 - lr * wd);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        p[size_t(i * cols + j)] =
            p[size_t(i * cols + j)] * decay - scale * x[size_t(tall ? j * rows + i : i * cols + j)];
  }
};

TEST(Optimizers, MuonOrthogonalizesMatricesAndGivesTheRestAdamW) {
  std::vector<Param> params = fresh_params(0.1);
  params[2].name = "model.embed_tokens.weight";  // an embedding: AdamW's update
  std::vector<Param> adamw_params = fresh_params(0.1);
  auto muon = make_muon(params);
  auto adamw = make_adamw(adamw_params);
  const std::vector<double> w0 = params[0].tensor.to_f64_vector();
  PlainMuon<double> truth{7, 5, w0, std::vector<double>(35, 0.0)};
  PlainMuon<float> base{7, 5, std::vector<float>(w0.begin(), w0.end()), std::vector<float>(35, 0.0f)};
  for (int step = 0; step < 4; ++step) {
    set_grads(params, step);
    set_grads(adamw_params, step);
    const Tensor g = params[0].tensor.grad();
    const std::vector<float> grad(g.data<float>(), g.data<float>() + g.numel());
    truth.step(grad, kLrs[step], 0.1);
    base.step(grad, kLrs[step], 0.1);
    muon->step(kLrs[step]);
    adamw->step(kLrs[step]);
    const std::vector<double> ours = params[0].tensor.to_f64_vector();
    double err = 0, base_err = 0;
    for (size_t k = 0; k < ours.size(); ++k)
      err += std::pow(ours[k] - truth.p[k], 2), base_err += std::pow(double(base.p[k]) - truth.p[k], 2);
    EXPECT_LE(std::sqrt(err), 1.5 * std::sqrt(base_err)) << "step " << step;
    for (size_t i : {size_t(1), size_t(2)})  // the bias and the embedding: AdamW's update, bit for bit
      EXPECT_EQ(params[i].tensor.to_f64_vector(), adamw_params[i].tensor.to_f64_vector()) << params[i].name;
  }
}

TEST(Optimizers, ClippingMatchesTorchClipGradNorm) {
  std::vector<Param> params = fresh_params(0);
  set_grads(params, 0, 3);
  const double norm = clip_grad_norm(params, 1.0);
  const double torch64 = fixture().load("clip.f64.norm").to_f64_vector()[0];
  // The float32 gradients x 3 are each rounded once (relative 2^-24), PyTorch's float64 ones are not;
  // the sums themselves are float64.
  EXPECT_LE(std::abs(norm - torch64), 0x1p-24 * torch64);
  for (const Param& p : params) {
    const Tensor truth = fixture().load("clip.f64." + p.name), torch32 = fixture().load("clip.f32." + p.name);
    EXPECT_LE(rms_error(p.tensor.grad(), truth), 1.5 * rms_error(torch32, truth)) << p.name;
  }
  // The norm does not depend on the thread count.
  std::vector<Param> again = fresh_params(0);
  set_grads(again, 0, 3);
  const int threads = num_threads();
  set_num_threads(1);
  EXPECT_EQ(clip_grad_norm(again, 1.0), norm);
  set_num_threads(threads);
}

TEST(Optimizers, StateRoundTripsAndForeignStateIsRefused) {
  std::vector<Param> params = fresh_params(0.1);
  auto adam = make_adamw(params);
  set_grads(params, 0);
  adam->step(1e-2);
  const auto state = adam->state();
  EXPECT_EQ(state.size(), 6u);
  EXPECT_TRUE(state.count("exp_avg_sq.w"));
  // A second optimizer loaded with the state takes the same next step.
  std::vector<Param> copy = fresh_params(0.1);
  for (size_t i = 0; i < copy.size(); ++i)
    std::copy(params[i].tensor.data<float>(), params[i].tensor.data<float>() + params[i].tensor.numel(),
              copy[i].tensor.data<float>());
  auto resumed = make_adamw(copy);
  std::map<std::string, Tensor> cloned;
  for (const auto& [name, t] : state) cloned[name] = t.clone();
  resumed->load_state(cloned, adam->steps());
  set_grads(params, 1);
  set_grads(copy, 1);
  adam->step(2e-2);
  resumed->step(2e-2);
  for (size_t i = 0; i < copy.size(); ++i)
    EXPECT_TRUE(std::equal(params[i].tensor.data<float>(),
                           params[i].tensor.data<float>() + params[i].tensor.numel(),
                           copy[i].tensor.data<float>()));
  std::map<std::string, Tensor> wrong = cloned;
  wrong["exp_avg.w"] = Tensor::zeros({2, 2}, DType::f32);
  EXPECT_NE(testing::error_of([&] { resumed->load_state(wrong, 1); }).find("state exp_avg.w is f32[2,2]"),
            std::string::npos);
}

TEST(Schedules, WarmupThenEachShape) {
  LrSchedule s{.shape = LrSchedule::Shape::cosine,
               .peak_lr = 1.0,
               .warmup_steps = 10,
               .total_steps = 110,
               .min_lr_ratio = 0.1};
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_DOUBLE_EQ(s.at(60), 0.55);  // half way down the cosine: (peak + min) / 2
  EXPECT_DOUBLE_EQ(s.at(110), 0.1);
  EXPECT_DOUBLE_EQ(s.at(500), 0.1);
  s.shape = LrSchedule::Shape::linear;
  EXPECT_DOUBLE_EQ(s.at(60), 0.55);
  s.shape = LrSchedule::Shape::constant;
  EXPECT_DOUBLE_EQ(s.at(100), 1.0);
  s.shape = LrSchedule::Shape::wsd;
  s.decay_fraction = 0.2;  // the last 22 of 110 steps decay
  EXPECT_DOUBLE_EQ(s.at(87), 1.0);
  EXPECT_DOUBLE_EQ(s.at(88), 1.0);
  EXPECT_DOUBLE_EQ(s.at(99), 1.0 - 0.9 * 11.0 / 22.0);
  EXPECT_DOUBLE_EQ(s.at(110), 0.1);
  s.warmup_steps = 200;
  EXPECT_NE(testing::error_of([&] { s.at(0); }).find("0 <= warmup <= total"), std::string::npos);
}

TEST(Optimizers, DefaultGroupsDecayOnlyMatrices) {
  std::map<std::string, Tensor> parameters = {
      {"model.embed_tokens.weight", Tensor::zeros({8, 4}, DType::f32)},
      {"model.layers.0.mlp.up_proj.weight", Tensor::zeros({4, 4}, DType::f32)},
      {"model.norm.weight", Tensor::zeros({4}, DType::f32)}};
  std::map<std::string, double> decay;
  for (const Param& p : default_groups(parameters, 0.1)) decay[p.name] = p.weight_decay;
  EXPECT_EQ(decay["model.embed_tokens.weight"], 0);
  EXPECT_EQ(decay["model.layers.0.mlp.up_proj.weight"], 0.1);
  EXPECT_EQ(decay["model.norm.weight"], 0);
}

}  // namespace
}  // namespace dew::train
