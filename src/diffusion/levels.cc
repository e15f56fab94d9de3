// Noise levels: DDPM's discrete schedules and the level sequences samplers walk (vp, Karras, flow).
#include <dew/diffusion.h>
#include <dew/error.h>

#include <cmath>
#include <numbers>

namespace dew::diffusion {

VpSchedule VpSchedule::linear(int64_t steps, double beta_start, double beta_end) {
  DEW_REQUIRE(
      steps >= 2 && beta_start > 0 && beta_end < 1 && beta_start <= beta_end,
      "[diffusion] linear schedule: {} steps, beta {} to {}; expected at least 2 steps and 0 < beta_start "
      "<= beta_end < 1",
      steps, beta_start, beta_end);
  VpSchedule v;
  double product = 1;
  for (int64_t i = 0; i < steps; ++i) {
    product *= 1 - (beta_start + (beta_end - beta_start) * double(i) / double(steps - 1));
    v.alphas_cumprod.push_back(product);
  }
  return v;
}

VpSchedule VpSchedule::cosine(int64_t steps, double s) {
  DEW_REQUIRE(steps >= 2 && s >= 0,
              "[diffusion] cosine schedule: {} steps, offset {}; expected at least 2 and >= 0", steps, s);
  auto f = [&](double t) {
    const double c = std::cos((t / double(steps) + s) / (1 + s) * std::numbers::pi / 2);
    return c * c;
  };
  VpSchedule v;
  double product = 1;
  for (int64_t i = 0; i < steps; ++i) {  // beta_i = 1 - f(i+1)/f(i), clipped at 0.999 (improved DDPM)
    product *= 1 - std::min(1 - f(double(i + 1)) / f(double(i)), 0.999);
    v.alphas_cumprod.push_back(product);
  }
  return v;
}

Level VpSchedule::level(int64_t step) const {
  DEW_REQUIRE(step >= 0 && step < int64_t(alphas_cumprod.size()),
              "[diffusion] step {}; the schedule has 0 to {}", step, alphas_cumprod.size() - 1);
  const double ab = alphas_cumprod[size_t(step)];
  return {std::sqrt(ab), std::sqrt(1 - ab), double(step)};
}

std::vector<Level> vp_levels(const VpSchedule& schedule, int64_t steps) {
  const int64_t T = int64_t(schedule.alphas_cumprod.size());
  DEW_REQUIRE(steps >= 1 && steps <= T, "[diffusion] {} sampling steps; expected 1 to the schedule's {}",
              steps, T);
  std::vector<Level> levels;
  for (int64_t i = 0; i < steps; ++i)  // trailing: T-1, ..., evenly spaced down to about T/steps - 1
    levels.push_back(
        schedule.level(int64_t(std::llround(double(T) - double(i) * double(T) / double(steps))) - 1));
  levels.push_back({1, 0, -1});
  return levels;
}

std::vector<Level> karras_levels(int64_t steps, double sigma_min, double sigma_max, double rho,
                                 Process process) {
  DEW_REQUIRE(
      steps >= 1 && sigma_min > 0 && sigma_max > sigma_min && rho > 0,
      "[diffusion] karras levels: {} steps, sigma {} to {}, rho {}; expected steps >= 1, 0 < sigma_min < "
      "sigma_max, rho > 0",
      steps, sigma_min, sigma_max, rho);
  std::vector<Level> levels;
  const double hi = std::pow(sigma_max, 1 / rho), lo = std::pow(sigma_min, 1 / rho);
  for (int64_t i = 0; i < steps; ++i) {
    const double u = steps == 1 ? 0 : double(i) / double(steps - 1);
    const double sigma = std::pow(hi + u * (lo - hi), rho);
    if (process == Process::ve)
      levels.push_back({1, sigma, std::log(sigma) / 4});
    else if (process == Process::vp)
      levels.push_back(
          {1 / std::sqrt(1 + sigma * sigma), sigma / std::sqrt(1 + sigma * sigma), std::log(sigma) / 4});
    else  // flow: t = sigma / (1 + sigma)
      levels.push_back({1 / (1 + sigma), sigma / (1 + sigma), sigma / (1 + sigma)});
  }
  levels.push_back({1, 0, 0});
  return levels;
}

std::vector<Level> flow_levels(int64_t steps, double shift) {
  DEW_REQUIRE(steps >= 1 && shift > 0,
              "[diffusion] flow levels: {} steps, shift {}; expected steps >= 1, shift > 0", steps, shift);
  std::vector<Level> levels;
  for (int64_t i = 0; i <= steps; ++i) {
    const double u = 1 - double(i) / double(steps), t = shift * u / (1 + (shift - 1) * u);
    levels.push_back({1 - t, t, t});
  }
  return levels;
}

}  // namespace dew::diffusion
