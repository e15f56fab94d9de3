// The samplers against Gaussian data, where the ideal denoiser is known in closed form: every sampler
// here is affine in x, in the denoiser's output and in its noise draws, so running it on the affine
// map's coefficients — a row for the constant, one per coordinate of the starting noise and one per
// coordinate of each draw — gives the samples' exact mean and covariance (no Monte Carlo error). Each
// must reach the data's mean and covariance with an error that shrinks at its published order.
#include <dew/diffusion.h>
#include <dew/ops.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "error_of.h"

namespace dew::diffusion {
namespace {

using Mat = std::array<double, 4>;  // 2 x 2, row-major

// The data: mean mu and covariance Q diag(lambda) Q^T, Q a rotation.
constexpr double kMu[2] = {0.5, -0.3};
constexpr double kLambda[2] = {1.0, 0.25};
constexpr double kAngle = 0.6;

// Q diag(f(lambda_k)) Q^T.
template <class F>
Mat eigen_map(F f) {
  const double c = std::cos(kAngle), s = std::sin(kAngle);
  const double g0 = f(kLambda[0]), g1 = f(kLambda[1]);
  return {c * c * g0 + s * s * g1, c * s * (g0 - g1), c * s * (g0 - g1), s * s * g0 + c * c * g1};
}
const Mat kSigma = eigen_map([](double l) { return l; });

constexpr int64_t kRows(int64_t draws) {
  return 3 + 2 * draws;  // constant, the starting noise's 2 coordinates, 2 per draw
}

// Rows j of X (R,2) mapped by M: y_j = M x_j, plus `offset` on row 0.
Tensor affine_rows(const Tensor& X, const Mat& M, const double offset[2]) {
  std::vector<double> x = X.to_f64_vector(), y(x.size());
  for (size_t j = 0; j < x.size() / 2; ++j) {
    y[2 * j] = M[0] * x[2 * j] + M[1] * x[2 * j + 1] + (j == 0 ? offset[0] : 0);
    y[2 * j + 1] = M[2] * x[2 * j] + M[3] * x[2 * j + 1] + (j == 0 ? offset[1] : 0);
  }
  return Tensor::from_values(y, X.shape(), DType::f64);
}

// E[x0 | x] = mu + G (x - a mu), G = Q diag(a lambda / (a^2 lambda + s^2)) Q^T.
Tensor ideal_denoiser(const Tensor& X, const Level& l) {
  const Mat G = eigen_map([&](double lambda) { return l.a * lambda / (l.a * l.a * lambda + l.s * l.s); });
  const double offset[2] = {kMu[0] - l.a * (G[0] * kMu[0] + G[1] * kMu[1]),
                            kMu[1] - l.a * (G[2] * kMu[0] + G[3] * kMu[1])};
  return affine_rows(X, G, offset);
}

// The exact marginal at the first level, N(a mu, a^2 Sigma + s^2 I), as coefficient rows.
Tensor start(const Level& l, int64_t draws) {
  const Mat C = eigen_map([&](double lambda) { return std::sqrt(l.a * l.a * lambda + l.s * l.s); });
  std::vector<double> x(size_t(2 * kRows(draws)), 0.0);
  x[0] = l.a * kMu[0], x[1] = l.a * kMu[1];
  x[2] = C[0], x[3] = C[2], x[4] = C[1], x[5] = C[3];  // rows: C's columns (C symmetric)
  return Tensor::from_values(x, {kRows(draws), 2}, DType::f64);
}

// Draw k: the identity on its two rows.
NoiseSource coefficient_noise() {
  auto k = std::make_shared<int64_t>(0);
  return [k](const Tensor& like) {
    std::vector<double> z(size_t(like.numel()), 0.0);
    const int64_t row = 3 + 2 * (*k)++;
    EXPECT_LT(row + 1, like.size(0)) << "more draws than steps";
    z[size_t(2 * row)] = 1, z[size_t(2 * row + 3)] = 1;
    return Tensor::from_values(z, like.shape(), DType::f64);
  };
}

// The largest error of the samples' mean and covariance entries.
double moment_error(const Tensor& X) {
  const std::vector<double> x = X.to_f64_vector();
  double cov[4] = {0, 0, 0, 0};
  for (size_t j = 1; j < x.size() / 2; ++j)
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) cov[2 * p + q] += x[2 * j + size_t(p)] * x[2 * j + size_t(q)];
  double worst = std::max(std::fabs(x[0] - kMu[0]), std::fabs(x[1] - kMu[1]));
  for (int i = 0; i < 4; ++i) worst = std::max(worst, std::fabs(cov[i] - kSigma[size_t(i)]));
  return worst;
}

struct OrderCase {
  const char* name;
  Sampler sampler;
  double eta;
  std::function<std::vector<Level>(int64_t)> levels;
  double order;
  int64_t steps;  // the smallest step count; errors at it, twice and four times it
};

double sampled_error(const OrderCase& c, int64_t steps) {
  const std::vector<Level> levels = c.levels(steps);
  return moment_error(sample(c.sampler, ideal_denoiser, levels, start(levels.front(), steps),
                             coefficient_noise(), {.eta = c.eta}));
}

std::vector<OrderCase> order_cases() {
  auto karras = [](Process p) { return [p](int64_t n) { return karras_levels(n, 1e-4, 80, 7, p); }; };
  auto flow = [](int64_t n) { return flow_levels(n); };
  return {{"euler", Sampler::euler, 0, karras(Process::ve), 1, 16},
          {"heun", Sampler::heun, 0, karras(Process::ve), 2, 8},
          {"ddim", Sampler::ddim, 0, karras(Process::vp), 1, 16},
          {"ddim_eta1", Sampler::ddim, 1, karras(Process::vp), 1, 16},
          {"ddpm", Sampler::ddpm, 0, karras(Process::vp), 1, 16},
          {"dpmpp_2m", Sampler::dpmpp_2m, 0, karras(Process::vp), 2, 8},
          {"dpmpp_2m_flow", Sampler::dpmpp_2m, 0, karras(Process::flow), 2, 8},
          {"flow_euler", Sampler::flow_euler, 0, flow, 1, 16}};
}

class SamplerOrder : public ::testing::TestWithParam<OrderCase> {};

TEST_P(SamplerOrder, ReachesGaussianDataAtItsPublishedOrder) {
  const OrderCase& c = GetParam();
  const double e1 = sampled_error(c, c.steps), e2 = sampled_error(c, 2 * c.steps),
               e4 = sampled_error(c, 4 * c.steps);
  const double order = std::log2(e2 / e4);
  EXPECT_LT(e4, e2);
  EXPECT_LT(e2, e1);
  EXPECT_GT(order, c.order - 0.3) << c.name << ": errors " << e1 << ", " << e2 << ", " << e4;
  EXPECT_LT(order, c.order + 0.6) << c.name << ": errors " << e1 << ", " << e2 << ", " << e4;
  std::printf("%s: errors %.3g, %.3g, %.3g at %lld, %lld, %lld steps: order %.2f\n", c.name, e1, e2, e4,
              (long long)c.steps, (long long)(2 * c.steps), (long long)(4 * c.steps), order);
}

INSTANTIATE_TEST_SUITE_P(Gaussian, SamplerOrder, ::testing::ValuesIn(order_cases()),
                         [](const ::testing::TestParamInfo<OrderCase>& info) { return info.param.name; });

// The average velocity over [r, t] of the flow path's ODE for Gaussian data: each eigen-coordinate of
// x - (1 - t) mu scales by the ratio of its deviations, sqrt((1 - t)^2 lambda + t^2).
Tensor ideal_average_velocity(const Tensor& Z, double r, double t) {
  const Mat M = eigen_map(
      [&](double l) { return std::sqrt(((1 - r) * (1 - r) * l + r * r) / ((1 - t) * (1 - t) * l + t * t)); });
  const double offset[2] = {(1 - r) * kMu[0] - (1 - t) * (M[0] * kMu[0] + M[1] * kMu[1]),
                            (1 - r) * kMu[1] - (1 - t) * (M[2] * kMu[0] + M[3] * kMu[1])};
  const Tensor zr = affine_rows(Z, M, offset);
  return mul(sub(Z, zr), Tensor::full({}, 1 / (t - r), DType::f64));
}

TEST(MeanFlow, OneOrFewStepsWithTheIdealAverageVelocityAreExact) {
  for (int64_t steps : {1, 2, 5}) {
    const Tensor z = start(flow_levels(1).front(), 0);
    EXPECT_LT(moment_error(meanflow_sample(ideal_average_velocity, steps, z)), 1e-12) << steps << " steps";
  }
}

TEST(Denoisers, EachPredictionGivesBackTheSample) {
  const Tensor x0 = Tensor::from_values({0.3, -1.2, 2.0}, {3}, DType::f64);
  const Tensor eps = Tensor::from_values({-0.7, 0.1, 1.5}, {3}, DType::f64);
  auto at = [&](const Level& l) {
    return add(mul(x0, Tensor::full({}, l.a, DType::f64)), mul(eps, Tensor::full({}, l.s, DType::f64)));
  };
  auto sc = [](const Tensor& t, double c) { return mul(t, Tensor::full({}, c, DType::f64)); };
  const Level vp{0.6, 0.8, 10}, flow{0.7, 0.3, 0.3};
  struct Check {
    Prediction prediction;
    Level level;
    Tensor target;
  };
  for (const Check& c : {Check{Prediction::sample, vp, x0}, Check{Prediction::epsilon, vp, eps},
                         Check{Prediction::v, vp, sub(sc(eps, vp.a), sc(x0, vp.s))},
                         Check{Prediction::velocity, flow, sub(eps, x0)}}) {
    const Denoiser d = denoiser_from([&](const Tensor&, const Level&) { return c.target; }, c.prediction);
    const std::vector<double> got = d(at(c.level), c.level).to_f64_vector(), want = x0.to_f64_vector();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14);
  }
  EXPECT_NE(testing::error_of([&] {
              denoiser_from([&](const Tensor&, const Level&) { return eps; }, Prediction::v)(at(flow), flow);
            }).find("v-prediction is defined on a vp path"),
            std::string::npos);
}

TEST(Denoisers, GuidanceExtrapolatesFromTheUnconditionalEstimate) {
  const Denoiser cond = [](const Tensor& x, const Level&) {
    return add(x, Tensor::full({}, 1.0, DType::f64));
  };
  const Denoiser uncond = [](const Tensor& x, const Level&) { return x; };
  const Tensor x = Tensor::from_values({2.0}, {1}, DType::f64);
  EXPECT_EQ(guided(cond, uncond, 3.0)(x, {}).to_f64_vector(), std::vector<double>{5.0});
  EXPECT_EQ(guided(cond, uncond, 1.0)(x, {}).to_f64_vector(), std::vector<double>{3.0});
}

TEST(Levels, SchedulesMatchDdpmAndKarras) {
  const VpSchedule linear = VpSchedule::linear();
  ASSERT_EQ(linear.alphas_cumprod.size(), 1000u);
  EXPECT_NEAR(linear.alphas_cumprod[0], 1 - 1e-4, 1e-15);
  EXPECT_NEAR(linear.alphas_cumprod[999], 4.035829e-5,
              1e-10);  // diffusers' DDPMScheduler's last alphas_cumprod
  const std::vector<Level> trailing = vp_levels(linear, 10);
  EXPECT_EQ(trailing.front().model_time, 999);
  EXPECT_EQ(trailing[9].model_time, 99);
  EXPECT_EQ(trailing.back().s, 0);
  const std::vector<Level> k = karras_levels(5, 0.002, 80);
  EXPECT_NEAR(k.front().sigma(), 80, 1e-12);
  EXPECT_NEAR(k[4].sigma(), 0.002, 1e-15);
  EXPECT_EQ(k.back().s, 0);
  const std::vector<Level> shifted = flow_levels(4, 3.0);
  EXPECT_NEAR(shifted[2].s, 3 * 0.5 / (1 + 2 * 0.5), 1e-15);
}

TEST(Samplers, BadNamesAndLevelsAreRefused) {
  EXPECT_NE(testing::error_of([] { parse_sampler("dpm++"); }).find("expected one of ddpm, ddim, euler"),
            std::string::npos);
  EXPECT_EQ(parse_sampler("dpmpp-2m"), Sampler::dpmpp_2m);
  const Tensor x = Tensor::zeros({1, 2}, DType::f64);
  EXPECT_NE(testing::error_of([&] {
              sample(Sampler::euler, ideal_denoiser, flow_levels(4), x);
            }).find("pure noise (a = 0, infinite sigma)"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              sample(Sampler::ddpm, ideal_denoiser, karras_levels(4), x);
            }).find("give it a NoiseSource"),
            std::string::npos);
}

}  // namespace
}  // namespace dew::diffusion
