// The training objectives (diffusion.h): per image, a time and noise drawn from (seed, step), the
// images put on the path there, and the squared error of the network's output against the target.
#include <dew/autodiff.h>
#include <dew/diffusion.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cmath>

#include "diffusion/detail.h"

namespace dew::diffusion {
namespace {

const char* kObjectiveNames[] = {"ddpm-epsilon", "ddpm-v", "edm", "flow", "meanflow"};

// Each draw of a step has its own stream: (step, what) never repeats across steps or kinds.
RandomKey key_of(uint64_t seed, uint64_t step, uint64_t what) {
  return {seed, 0x6f626a0000000000ull ^ (step << 4) ^ what, 0};  // "obj"
}
std::vector<double> draws(int64_t n, uint64_t seed, uint64_t step, uint64_t what, bool normal) {
  Tensor t = Tensor::empty({n}, DType::f64);
  if (normal)
    fill_normal(t, key_of(seed, step, what), 0, 1);
  else
    fill_uniform(t, key_of(seed, step, what), 0, 1);
  return t.to_f64_vector();
}

// values (B) as a (B, 1, ..., 1) tensor that broadcasts over an image of x's rank, in x's dtype.
Tensor per_image(const std::vector<double>& values, const Tensor& x) {
  Shape shape(size_t(x.dim()), 1);
  shape[0] = int64_t(values.size());
  return Tensor::from_values(values, shape, x.dtype()).to(x.device());
}
Tensor vector_of(const std::vector<double>& values, DType dtype, Device device) {
  return Tensor::from_values(values, {int64_t(values.size())}, dtype).to(device);
}

// t in (0, 1): uniform, or the sigmoid of a normal (SD3's logit-normal).
std::vector<double> unit_times(int64_t n, const ObjectiveOptions& o, uint64_t seed, uint64_t step,
                               uint64_t what) {
  std::vector<double> t = draws(n, seed, step, what, o.logit_normal);
  if (o.logit_normal)
    for (double& v : t) v = 1 / (1 + std::exp(-(o.logit_mean + o.logit_std * v)));
  return t;
}

// The mean over images of each image's mean squared error, each weighted by `weights` (B) if given.
Tensor mean_squared_error(const Tensor& out, const Tensor& target, const Tensor& weights = {}) {
  std::vector<int64_t> dims;
  for (int64_t d = 1; d < out.dim(); ++d) dims.push_back(d);
  Tensor per = mean(square(sub(out, target)), dims);
  if (weights.defined()) per = mul(per, weights);
  return mean(per);
}

}  // namespace

Objective parse_objective(const std::string& name) {
  return detail::value_named<Objective>(kObjectiveNames, name, "objective");
}

std::string objective_name(Objective objective) {
  return kObjectiveNames[size_t(objective)];
}

DiffusionLoss diffusion_loss(const TrainingNetwork& network, const Tensor& x0, const ObjectiveOptions& o,
                             uint64_t seed, uint64_t step) {
  DEW_REQUIRE(x0.dim() >= 2 && (x0.dtype() == DType::f32 || x0.dtype() == DType::f64),
              "[diffusion] images {}; expected f32 or f64 (B, ...)", x0.describe());
  const int64_t B = x0.size(0);
  Tensor eps = Tensor::empty(x0.shape(), x0.dtype());
  fill_normal(eps, key_of(seed, step, 1), 0, 1);
  eps = eps.to(x0.device());
  const std::vector<double> u = unit_times(B, o, seed, step, 2);
  DiffusionLoss out;
  std::vector<double> a(static_cast<size_t>(B)), s(static_cast<size_t>(B)), times(static_cast<size_t>(B));
  switch (o.objective) {
    case Objective::ddpm_epsilon:
    case Objective::ddpm_v: {
      const VpSchedule schedule = vp_schedule(o);
      const int64_t T = int64_t(schedule.alphas_cumprod.size());
      const std::vector<double> pick = draws(B, seed, step, 3, false);
      for (int64_t b = 0; b < B; ++b) {
        const Level l = schedule.level(std::min(T - 1, int64_t(pick[size_t(b)] * double(T))));
        a[size_t(b)] = l.a, s[size_t(b)] = l.s, times[size_t(b)] = l.model_time;
      }
      break;
    }
    case Objective::edm: {
      const std::vector<double> n = draws(B, seed, step, 3, true);
      for (int64_t b = 0; b < B; ++b) {
        const double sigma = std::exp(o.p_mean + o.p_std * n[size_t(b)]);
        a[size_t(b)] = 1, s[size_t(b)] = sigma, times[size_t(b)] = std::log(sigma) / 4;
      }
      break;
    }
    case Objective::flow:
    case Objective::meanflow:
      for (int64_t b = 0; b < B; ++b)
        a[size_t(b)] = 1 - u[size_t(b)], s[size_t(b)] = u[size_t(b)], times[size_t(b)] = u[size_t(b)];
      break;
  }
  const Tensor x = add(mul(x0, per_image(a, x0)), mul(eps, per_image(s, x0)));  // on the path
  const DType time_dtype = x0.dtype();
  out.times = vector_of(times, time_dtype, x0.device());
  switch (o.objective) {
    case Objective::ddpm_epsilon:
      out.input = x, out.target = eps;
      break;
    case Objective::ddpm_v:
      out.input = x, out.target = sub(mul(eps, per_image(a, x0)), mul(x0, per_image(s, x0)));
      break;
    case Objective::edm: {
      std::vector<double> c_in(static_cast<size_t>(B)), c_skip(static_cast<size_t>(B)),
          c_out(static_cast<size_t>(B));
      const double sd2 = o.sigma_data * o.sigma_data;
      for (size_t b = 0; b < size_t(B); ++b) {
        const double s2 = s[b] * s[b];
        c_in[b] = 1 / std::sqrt(s2 + sd2), c_skip[b] = sd2 / (s2 + sd2),
        c_out[b] = s[b] * o.sigma_data / std::sqrt(s2 + sd2);
      }
      out.input = mul(x, per_image(c_in, x0));
      out.target = div(sub(x0, mul(x, per_image(c_skip, x0))), per_image(c_out, x0));
      break;
    }
    case Objective::flow:
      out.input = x, out.target = sub(eps, x0);
      break;
    case Objective::meanflow: {
      // r and t: two draws sorted for `meanflow_ratio` of the images, r = t for the rest.
      const std::vector<double> second = unit_times(B, o, seed, step, 4),
                                which = draws(B, seed, step, 5, false);
      std::vector<double> r(static_cast<size_t>(B)), dt(static_cast<size_t>(B));
      for (size_t b = 0; b < size_t(B); ++b) {
        const bool interval = which[b] < o.meanflow_ratio;
        times[b] = interval ? std::max(u[b], second[b]) : u[b];
        r[b] = interval ? std::min(u[b], second[b]) : u[b];
        dt[b] = times[b] - r[b];
        a[b] = 1 - times[b], s[b] = times[b];
      }
      out.times = vector_of(times, time_dtype, x0.device());
      out.other_times = vector_of(r, time_dtype, x0.device());
      out.input = add(mul(x0, per_image(a, x0)), mul(eps, per_image(s, x0)));
      const Tensor v = sub(eps, x0);
      // u and du/dt along (dz, dr, dt) = (v, 0, 1), one forward in forward mode.
      const JvpResult j = jvp(
          [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{network(in[0], in[2], in[1])}; },
          {out.input, out.other_times, out.times},
          {v, Tensor::zeros({B}, time_dtype, x0.device()), Tensor::full({B}, 1.0, time_dtype, x0.device())});
      out.target = sub(v, mul(j.tangents[0].detach(), per_image(dt, x0))).detach();
      const Tensor prediction = j.outputs[0];
      Tensor weights;
      if (o.meanflow_power != 0) {
        std::vector<int64_t> dims;
        for (int64_t d = 1; d < x0.dim(); ++d) dims.push_back(d);
        const Tensor per = mean(square(sub(prediction.detach(), out.target)), dims);
        weights = pow(add(per, Tensor::full({}, 1e-3, per.dtype(), per.device())),
                      Tensor::full({}, -o.meanflow_power, per.dtype(), per.device()));
      }
      out.loss = mean_squared_error(cast(prediction, x0.dtype()), out.target, weights);
      return out;
    }
  }
  out.target = out.target.detach();
  out.loss = mean_squared_error(cast(network(out.input, out.times, {}), x0.dtype()), out.target);
  return out;
}

Denoiser objective_denoiser(Network network, const ObjectiveOptions& o) {
  switch (o.objective) {
    case Objective::ddpm_epsilon:
      return denoiser_from(std::move(network), Prediction::epsilon);
    case Objective::ddpm_v:
      return denoiser_from(std::move(network), Prediction::v);
    case Objective::edm:
      return denoiser_from(std::move(network), Prediction::edm, o.sigma_data);
    case Objective::flow:
      return denoiser_from(std::move(network), Prediction::velocity);
    case Objective::meanflow:  // u(z, t, t) is the instantaneous velocity
      return denoiser_from(std::move(network), Prediction::velocity);
  }
  fail("[diffusion] unknown objective");
}

std::vector<Level> objective_levels(const ObjectiveOptions& o, int64_t steps, Sampler sampler) {
  switch (o.objective) {
    case Objective::ddpm_epsilon:
    case Objective::ddpm_v:
      return vp_levels(vp_schedule(o), steps);
    case Objective::edm:
      return karras_levels(steps);
    case Objective::flow:
    case Objective::meanflow:
      return sampler == Sampler::flow_euler ? flow_levels(steps)
                                            : karras_levels(steps, 0.002, 80, 7, Process::flow);
  }
  fail("[diffusion] unknown objective");
}

}  // namespace dew::diffusion
