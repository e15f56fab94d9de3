// Diffusion and flow processes, their noise levels and their samplers (docs/diffusion.md).
// Every process is a Gaussian path x = a x0 + s eps between data x0 and noise eps:
//   vp   (DDPM):            a = sqrt(alpha_bar), s = sqrt(1 - alpha_bar)
//   ve   (EDM):             a = 1,               s = sigma
//   flow (rectified flow):  a = 1 - t,           s = t
// A sampler walks x from the first level to the last (s = 0), asking a denoiser for x0's estimate at
// each level; it is written in terms of (a, s) alone, so a sampler serves every process it is defined
// for. Guidance and parameterizations (epsilon, v, x0, velocity) are wrappers around the denoiser.
#pragma once

#include <dew/tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace dew::diffusion {

enum class Process { vp, ve, flow };

// One noise level: the path's coefficients and the time the network is given there (a DDPM model's
// integer step, EDM's c_noise = ln(sigma)/4, a flow model's t).
struct Level {
  double a = 1, s = 0;
  double model_time = 0;
  double sigma() const { return s / a; }  // the level's noise-to-signal ratio (infinite at a = 0)
};

// DDPM's training schedule: alpha_bar over `steps` discrete steps (cumulative products of 1 - beta).
struct VpSchedule {
  std::vector<double> alphas_cumprod;
  static VpSchedule linear(int64_t steps = 1000, double beta_start = 1e-4, double beta_end = 0.02);
  static VpSchedule cosine(int64_t steps = 1000, double s = 0.008);  // Nichol & Dhariwal, beta <= 0.999
  Level level(int64_t step) const;                                   // model_time = step
};

// The levels a sampler visits, from noisiest to clean (the last has s = 0):
// `steps` of DDPM's discrete steps, evenly spaced from the last ("trailing", so the first is pure
// DDPM noise), then the clean level.
std::vector<Level> vp_levels(const VpSchedule& schedule, int64_t steps);
// Karras et al.'s sigmas (rho = 7) from sigma_max to sigma_min, then 0, on the ve path (model_time
// ln(sigma)/4) — or the same sigmas on a continuous vp path (a = 1/sqrt(1 + sigma^2), model_time
// ln(sigma)/4) or a flow path (t = sigma/(1 + sigma), model_time t).
std::vector<Level> karras_levels(int64_t steps, double sigma_min = 0.002, double sigma_max = 80,
                                 double rho = 7, Process process = Process::ve);
// t from 1 to 0 in `steps` equal steps on the flow path, each t mapped through the timestep shift
// t' = shift t / (1 + (shift - 1) t) (SD3's; 1: none).
std::vector<Level> flow_levels(int64_t steps, double shift = 1);

// The network's estimate of x0 from x at a level (the denoiser every sampler calls), and of the
// noise when a sampler adds some (standard normal, x's shape, a fresh draw per call).
using Denoiser = std::function<Tensor(const Tensor& x, const Level& level)>;
using NoiseSource = std::function<Tensor(const Tensor& like)>;
// Philox normal draws keyed by (seed, draw number): the same seed, the same samples.
NoiseSource seeded_noise(uint64_t seed);

// What a network predicts, turned into a Denoiser: x0 itself, the noise eps, v = a eps - s x0
// (Salimans & Ho), a flow's velocity d x / d t = eps - x0, or EDM's preconditioned F on the ve path:
// D = c_skip x + c_out F(c_in x, ln(sigma)/4) with c_skip = sd^2/(sigma^2 + sd^2), c_out = sigma sd /
// sqrt(sigma^2 + sd^2), c_in = 1/sqrt(sigma^2 + sd^2), sd = sigma_data.
enum class Prediction { sample, epsilon, v, velocity, edm };
using Network = std::function<Tensor(const Tensor& x, const Level& level)>;
Denoiser denoiser_from(Network network, Prediction prediction, double sigma_data = 0.5);
// Classifier-free guidance: uncond + scale (cond - uncond), on x0 (the same on eps, v or velocity:
// each is affine in x0 at a level).
Denoiser guided(Denoiser conditional, Denoiser unconditional, double scale);

// The samplers (docs/diffusion.md has each one's update and order). x starts at levels.front() and
// is returned at levels.back() (s = 0): the samples.
enum class Sampler { ddpm, ddim, euler, heun, dpmpp_2m, flow_euler };
Sampler parse_sampler(const std::string& name);  // "ddpm", "ddim", "euler", "heun", "dpmpp-2m", "flow-euler"
std::string sampler_name(Sampler sampler);
struct SamplerOptions {
  double eta = 0;  // ddim: 0 deterministic, 1 as much fresh noise as DDPM's posterior
};
Tensor sample(Sampler sampler, const Denoiser& denoiser, const std::vector<Level>& levels, Tensor x,
              const NoiseSource& noise = {}, const SamplerOptions& options = {});
// The noise x starts from: s eps at the first level (the data's own part, a x0, is left out: for
// DDPM's last step and a flow's t = 1 it is 0 or nearly, and EDM's sigma_max dwarfs the data).
Tensor initial_noise(const Level& first, const Shape& shape, uint64_t seed, DType dtype = DType::f32);

// MeanFlow (Geng et al. 2025): a network u(z, r, t) of the average velocity over [r, t] on the flow
// path; z_r = z_t - (t - r) u(z_t, r, t), from t = 1 to 0 in `steps` equal steps (1: one step).
using AverageVelocity = std::function<Tensor(const Tensor& z, double r, double t)>;
Tensor meanflow_sample(const AverageVelocity& u, int64_t steps, Tensor z);

// Training objectives (docs/diffusion.md). Each draws, per image, its time(s) and noise from (seed,
// step), puts the images on the path there, and regresses the network's output on a target:
//   ddpm-epsilon, ddpm-v  a step t of the DDPM schedule, uniform; target eps, or v = a eps - s x0
//   edm                   ln(sigma) ~ N(p_mean, p_std^2); the network sees c_in x at ln(sigma)/4 and
//                         is regressed on (x0 - c_skip x)/c_out (EDM's weighting folded in)
//   flow                  t uniform in [0, 1] (or logit-normal); target the velocity eps - x0
//   meanflow              r <= t (r = t for all but `meanflow_ratio` of the images); target
//                         v - (t - r) du/dt, du/dt the network's tangent along (v, 0, 1) in (z, r, t)
//                         (forward mode), held fixed; each image's squared error weighted by
//                         1/(its mean squared error + 1e-3)^meanflow_power, the weight held fixed
// The loss is the mean over images of each one's mean squared error.
enum class Objective { ddpm_epsilon, ddpm_v, edm, flow, meanflow };
Objective parse_objective(const std::string& name);  // "ddpm-epsilon", "ddpm-v", "edm", "flow", "meanflow"
std::string objective_name(Objective objective);
struct ObjectiveOptions {
  Objective objective = Objective::flow;
  std::string schedule = "linear";  // ddpm-*: DDPM's linear or cosine schedule of schedule_steps
  int64_t schedule_steps = 1000;
  double p_mean = -1.2, p_std = 1.2;  // edm
  double sigma_data = 0.5;            // edm
  bool logit_normal = false;          // flow, meanflow: t = sigmoid(N(logit_mean, logit_std^2))
  double logit_mean = 0, logit_std = 1;
  double meanflow_ratio = 0.25, meanflow_power = 1;
};
VpSchedule vp_schedule(const ObjectiveOptions& options);  // the ddpm objectives' schedule
// The options as JSON (diffusion.json beside a trained model; a [diffusion] TOML table) and back: every
// key optional but "objective"; unknown keys and out-of-range values refused by name.
std::string objective_json(const ObjectiveOptions& options);
ObjectiveOptions parse_objective_json(const std::string& json_text, const std::string& source);

// The network while training: images x (B,...), the model's time per image (B), and MeanFlow's other
// time r (B) (undefined for the other objectives).
using TrainingNetwork = std::function<Tensor(const Tensor& x, const Tensor& t, const Tensor& r)>;
struct DiffusionLoss {
  Tensor loss;                // scalar f32 (f64 for f64 images), differentiable through the network
  Tensor input, target;       // what the network saw and what it was regressed on (held fixed)
  Tensor times, other_times;  // (B) the model times given, and MeanFlow's r
};
DiffusionLoss diffusion_loss(const TrainingNetwork& network, const Tensor& x0,
                             const ObjectiveOptions& options, uint64_t seed, uint64_t step);
// The denoiser of a network trained with `options`, and the levels `sampler` walks in `steps` steps:
// DDPM's trailing steps for the ddpm objectives, Karras sigmas for edm, and for flow models uniform
// times for flow-euler, Karras sigmas on the flow path for the others (euler and heun need a finite
// sigma; DPM-Solver++ keeps its order where the last step is small).
Denoiser objective_denoiser(Network network, const ObjectiveOptions& options);
std::vector<Level> objective_levels(const ObjectiveOptions& options, int64_t steps, Sampler sampler);

}  // namespace dew::diffusion
