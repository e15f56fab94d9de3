// The samplers, each written with the path's (a, s) at the current level and the next (a', s'), the
// denoiser's estimate D of x0 and eps = (x - a D) / s (docs/diffusion.md derives each update):
//   ddpm       the forward process's posterior q(x' | x, x0 = D): mean (k s'^2/s^2) x + (a' v/s^2) D and
//              variance v s'^2 / s^2, with k = a/a' and v = s^2 - k^2 s'^2 (DDPM's beta_t on its schedule)
//   ddim       x' = a' D + sqrt(s'^2 - c^2) eps + c z, c = eta x the posterior's deviation
//   euler      on sigma = s/a and x/a (EDM's Algorithm 1 without churn)
//   heun       Euler's step corrected by the slope at its end (EDM's Algorithm 1), Euler into s' = 0
//   dpmpp_2m   DPM-Solver++(2M): x' = (s'/s) x + a' (1 - e^-h) D~, h the step in log(a/s), D~ extrapolated
//              from the last two estimates (first order at the first and the last step)
//   flow_euler x' = x + (t' - t) v on a flow path, v = eps - D
#include <dew/diffusion.h>
#include <dew/error.h>
#include <dew/ops.h>

#include <cmath>

#include "diffusion/detail.h"

namespace dew::diffusion {
namespace {

using detail::scaled;

// p x + q y
Tensor combine(double p, const Tensor& x, double q, const Tensor& y) {
  return add(scaled(x, p), scaled(y, q));
}

const char* kSamplerNames[] = {"ddpm", "ddim", "euler", "heun", "dpmpp-2m", "flow-euler"};

void check_levels(Sampler sampler, const std::vector<Level>& levels) {
  const std::string name = sampler_name(sampler);
  DEW_REQUIRE(levels.size() >= 2 && levels.back().s == 0,
              "[diffusion] {}: {} levels; expected at least 2, the last clean (s = 0)", name, levels.size());
  for (size_t i = 0; i + 1 < levels.size(); ++i) {
    const Level &l = levels[i], &n = levels[i + 1];
    DEW_REQUIRE(
        l.s > 0 && l.a >= 0 && n.a > 0 && n.s * l.a <= l.s * n.a,
        "[diffusion] {}: level {} (a {}, s {}) to level {} (a {}, s {}); expected noise that falls, s > 0 "
        "before the last level and a > 0 after the first",
        name, i, l.a, l.s, i + 1, n.a, n.s);
    if (sampler == Sampler::euler || sampler == Sampler::heun)
      DEW_REQUIRE(l.a > 0,
                  "[diffusion] {}: level {} is pure noise (a = 0, infinite sigma); start below it, or use "
                  "ddim, dpmpp-2m or flow-euler",
                  name, i);
    if (sampler == Sampler::flow_euler)
      DEW_REQUIRE(std::fabs(l.a + l.s - 1) < 1e-9 && std::fabs(n.a + n.s - 1) < 1e-9,
                  "[diffusion] flow-euler: level {} has a {}, s {}; expected a flow path (a + s = 1)", i, l.a,
                  l.s);
  }
}

}  // namespace

Sampler parse_sampler(const std::string& name) {
  return detail::value_named<Sampler>(kSamplerNames, name, "sampler");
}

std::string sampler_name(Sampler sampler) {
  return kSamplerNames[size_t(sampler)];
}

Tensor sample(Sampler sampler, const Denoiser& denoiser, const std::vector<Level>& levels, Tensor x,
              const NoiseSource& noise, const SamplerOptions& options) {
  check_levels(sampler, levels);
  const bool stochastic = sampler == Sampler::ddpm || (sampler == Sampler::ddim && options.eta > 0);
  DEW_REQUIRE(!stochastic || noise, "[diffusion] {}: draws noise at each step; give it a NoiseSource",
              sampler_name(sampler));
  DEW_REQUIRE(options.eta >= 0 && options.eta <= 1, "[diffusion] ddim: eta {}; expected 0 to 1", options.eta);
  Tensor previous;          // dpmpp_2m: the last step's estimate
  double previous_h = NAN;  // and its step in log(a/s)
  for (size_t i = 0; i + 1 < levels.size(); ++i) {
    const Level &l = levels[i], &n = levels[i + 1];
    const Tensor d = denoiser(x, l);
    switch (sampler) {
      case Sampler::ddpm:
      case Sampler::ddim: {
        const double k = l.a / n.a, v = std::max(0.0, l.s * l.s - k * k * n.s * n.s);
        const double deviation = std::sqrt(v) * n.s / l.s;
        if (sampler == Sampler::ddpm) {
          x = combine(k * n.s * n.s / (l.s * l.s), x, n.a * v / (l.s * l.s), d);
          if (deviation > 0) x = add(x, scaled(noise(x), deviation));
        } else {
          const double c = options.eta * deviation;
          const Tensor eps = scaled(sub(x, scaled(d, l.a)), 1 / l.s);
          x = combine(n.a, d, std::sqrt(std::max(0.0, n.s * n.s - c * c)), eps);
          if (c > 0) x = add(x, scaled(noise(x), c));
        }
        break;
      }
      case Sampler::euler:
      case Sampler::heun: {
        const double sigma = l.sigma(), next = n.sigma();
        const Tensor xs = scaled(x, 1 / l.a);                // x / a
        const Tensor slope = scaled(sub(xs, d), 1 / sigma);  // d(x/a)/d sigma
        Tensor end = add(xs, scaled(slope, next - sigma));   // Euler's step
        if (sampler == Sampler::heun && next > 0) {
          const Tensor end_slope = scaled(sub(end, denoiser(scaled(end, n.a), n)), 1 / next);
          end = add(xs, scaled(add(slope, end_slope), (next - sigma) / 2));
        }
        x = scaled(end, n.a);
        break;
      }
      case Sampler::dpmpp_2m: {
        const double decay = l.a == 0 ? 0 : (n.s * l.a) / (l.s * n.a);  // e^-h
        const double h = n.s == 0 || l.a == 0 ? INFINITY : -std::log(decay);
        Tensor estimate = d;
        if (previous.defined() && std::isfinite(h) && std::isfinite(previous_h)) {
          const double r = previous_h / h;
          estimate = combine(1 + 1 / (2 * r), d, -1 / (2 * r), previous);
        }
        x = combine(n.s / l.s, x, n.a * (1 - decay), estimate);
        previous = d, previous_h = h;
        break;
      }
      case Sampler::flow_euler: {
        const Tensor velocity = sub(scaled(sub(x, scaled(d, l.a)), 1 / l.s), d);  // eps - x0
        x = add(x, scaled(velocity, n.s - l.s));
        break;
      }
    }
  }
  return x;
}

Tensor meanflow_sample(const AverageVelocity& u, int64_t steps, Tensor z) {
  DEW_REQUIRE(steps >= 1, "[diffusion] meanflow: {} steps; expected at least 1", steps);
  for (int64_t i = 0; i < steps; ++i) {
    const double t = 1 - double(i) / double(steps), r = 1 - double(i + 1) / double(steps);
    z = sub(z, scaled(u(z, r, t), t - r));
  }
  return z;
}

}  // namespace dew::diffusion
