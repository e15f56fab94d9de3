// The samplers on data whose ideal denoiser is known: 1-D Gaussian data N(mu, var), where
// E[x0 | x] = mu + a var (x - a mu) / (a^2 var + s^2). Each sampler draws 8192 samples at two step
// counts and prints their mean and variance beside the data's. Run: build/examples/samplers
#include <dew/diffusion.h>
#include <dew/ops.h>

#include <cmath>
#include <cstdio>
#include <functional>

namespace df = dew::diffusion;

int main() {
  const double mu = 1.5, var = 0.25;
  const df::Denoiser ideal = [&](const dew::Tensor& x, const df::Level& l) {
    const double gain = l.a * var / (l.a * l.a * var + l.s * l.s);
    return dew::add(dew::mul(x, dew::Tensor::full({}, gain, x.dtype())),
                    dew::Tensor::full({}, mu - gain * l.a * mu, x.dtype()));
  };
  struct Run {
    df::Sampler sampler;
    std::function<std::vector<df::Level>(int64_t)> levels;
    int64_t steps;  // and four times as many
  };
  const Run runs[] = {
      {df::Sampler::ddpm, [](int64_t n) { return df::vp_levels(df::VpSchedule::linear(), n); }, 50},
      {df::Sampler::ddim, [](int64_t n) { return df::vp_levels(df::VpSchedule::cosine(), n); }, 10},
      {df::Sampler::euler, [](int64_t n) { return df::karras_levels(n); }, 10},
      {df::Sampler::heun, [](int64_t n) { return df::karras_levels(n); }, 10},
      {df::Sampler::dpmpp_2m, [](int64_t n) { return df::karras_levels(n); }, 10},
      {df::Sampler::flow_euler, [](int64_t n) { return df::flow_levels(n); }, 10}};
  std::printf("data: mean %.4f, variance %.4f\n", mu, var);
  for (const Run& r : runs)
    for (int64_t steps : {r.steps, 4 * r.steps}) {
      // The exact marginal of the first level (the data's part a x0 included), so that only the
      // sampler's own error shows.
      const std::vector<df::Level> levels = r.levels(steps);
      const df::Level& first = levels.front();
      const double deviation = std::sqrt(first.a * first.a * var + first.s * first.s);
      dew::Tensor x = df::initial_noise(first, {8192}, 1, dew::DType::f64);
      x = dew::add(dew::mul(x, dew::Tensor::full({}, deviation / first.s, dew::DType::f64)),
                   dew::Tensor::full({}, first.a * mu, dew::DType::f64));
      const std::vector<double> v =
          df::sample(r.sampler, ideal, levels, x, df::seeded_noise(2)).to_f64_vector();
      double m = 0, q = 0;
      for (double s : v) m += s;
      m /= double(v.size());
      for (double s : v) q += (s - m) * (s - m);
      std::printf("%-10s %3lld steps: mean %.4f, variance %.4f\n", df::sampler_name(r.sampler).c_str(),
                  static_cast<long long>(steps), m, q / double(v.size() - 1));
    }
  return 0;
}
