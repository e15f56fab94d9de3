// The training objectives: each one's target, read as the network's prediction, denoises its input
// back to the images exactly; the loss is the squared error against that target; draws depend on
// (seed, step) only; MeanFlow's target is v - (t - r) du/dt with du/dt from forward mode.
#include <dew/diffusion.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <cmath>

#include "error_of.h"

namespace dew::diffusion {
namespace {

Tensor images(int64_t B) {
  Tensor x = Tensor::empty({B, 2, 3, 3}, DType::f64);
  fill_uniform(x, {11, 0}, -1, 1);
  return x;
}

// The level image b was put at, from the model time the objective gave it.
Level level_of(const ObjectiveOptions& o, double time) {
  switch (o.objective) {
    case Objective::ddpm_epsilon:
    case Objective::ddpm_v:
      return vp_schedule(o).level(int64_t(time));
    case Objective::edm:
      return {1, std::exp(4 * time), time};
    default:
      return {1 - time, time, time};
  }
}

TEST(Objectives, EachTargetDenoisesItsInputToTheImages) {
  for (Objective objective : {Objective::ddpm_epsilon, Objective::ddpm_v, Objective::edm, Objective::flow}) {
    ObjectiveOptions o;
    o.objective = objective;
    for (uint64_t step = 0; step < 6; ++step) {
      const Tensor x0 = images(1);
      Tensor target;
      const DiffusionLoss l = diffusion_loss(
          [&](const Tensor& x, const Tensor&, const Tensor&) { return Tensor::zeros(x.shape(), x.dtype()); },
          x0, o, 3, step);
      const Level level = level_of(o, l.times.to_f64_vector()[0]);
      // EDM's network saw c_in x: the denoiser takes x itself.
      const double c_in = objective == Objective::edm ? 1 / std::sqrt(level.s * level.s + 0.25) : 1;
      const Tensor x = mul(l.input, Tensor::full({}, 1 / c_in, DType::f64));
      const Denoiser d = objective_denoiser([&](const Tensor&, const Level&) { return l.target; }, o);
      const std::vector<double> got = d(x, level).to_f64_vector(), want = x0.to_f64_vector();
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-12) << objective_name(objective) << " step " << step << " at " << i;
      // A network that answers zero pays the target's mean square.
      const std::vector<double> t = l.target.to_f64_vector();
      double sum = 0;
      for (double v : t) sum += v * v;
      EXPECT_NEAR(l.loss.to_f64_vector()[0], sum / double(t.size()), 1e-12);
    }
  }
}

TEST(Objectives, DrawsDependOnSeedAndStepOnly) {
  ObjectiveOptions o;
  const auto zero = [](const Tensor& x, const Tensor&, const Tensor&) {
    return Tensor::zeros(x.shape(), x.dtype());
  };
  const Tensor x0 = images(8);
  const auto input = [&](uint64_t seed, uint64_t step) {
    return diffusion_loss(zero, x0, o, seed, step).input.to_f64_vector();
  };
  EXPECT_EQ(input(1, 5), input(1, 5));
  EXPECT_NE(input(1, 5), input(1, 6));
  EXPECT_NE(input(1, 5), input(2, 5));
  o.objective = Objective::edm;  // ln(sigma) ~ N(-1.2, 1.2^2): over many images, its mean and spread
  const Tensor many = images(4000);
  const std::vector<double> t = diffusion_loss(zero, many, o, 1, 0).times.to_f64_vector();
  double m = 0, q = 0;
  for (double v : t) m += 4 * v;
  m /= double(t.size());
  for (double v : t) q += (4 * v - m) * (4 * v - m);
  EXPECT_NEAR(m, -1.2, 0.06);
  EXPECT_NEAR(std::sqrt(q / double(t.size())), 1.2, 0.06);
}

TEST(Objectives, MeanFlowsTargetUsesTheNetworksTimeDerivative) {
  ObjectiveOptions o;
  o.objective = Objective::meanflow;
  o.meanflow_power = 0;
  // u(z, r, t) = 0.5 z + 2 t - 3 r per element: du/dt along (v, 0, 1) is 0.5 v + 2.
  const TrainingNetwork u = [](const Tensor& z, const Tensor& t, const Tensor& r) {
    const int64_t B = z.size(0);
    const Tensor times =
        sub(mul(t, Tensor::full({}, 2.0, DType::f64)), mul(r, Tensor::full({}, 3.0, DType::f64)));
    return add(mul(z, Tensor::full({}, 0.5, DType::f64)), times.reshape({B, 1, 1, 1}));
  };
  const Tensor x0 = images(400);
  const DiffusionLoss l = diffusion_loss(u, x0, o, 7, 2);
  const std::vector<double> t = l.times.to_f64_vector(), r = l.other_times.to_f64_vector(),
                            z = l.input.to_f64_vector(), x = x0.to_f64_vector(),
                            target = l.target.to_f64_vector();
  int64_t intervals = 0;
  for (size_t b = 0; b < t.size(); ++b) {
    ASSERT_LE(r[b], t[b]);
    intervals += r[b] < t[b];
    for (size_t i = b * 18; i < (b + 1) * 18; ++i) {  // z = (1 - t) x0 + t eps, v = eps - x0
      const double v = (z[i] - (1 - t[b]) * x[i]) / t[b] - x[i];
      ASSERT_NEAR(target[i], v - (t[b] - r[b]) * (0.5 * v + 2), 1e-9);
    }
  }
  EXPECT_NEAR(double(intervals) / 400, 0.25, 0.07);  // meanflow_ratio
}

TEST(Objectives, BadNamesAreRefused) {
  EXPECT_NE(testing::error_of([] { parse_objective("rectified"); }).find("expected one of ddpm-epsilon"),
            std::string::npos);
  EXPECT_EQ(parse_objective("ddpm-v"), Objective::ddpm_v);
}

}  // namespace
}  // namespace dew::diffusion
