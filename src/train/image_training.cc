// An image model's FLOP count and its samples, for the Trainer's metrics and grids and for `dew sample`.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/train.h>

#include <algorithm>
#include <cmath>

#include "io/png.h"

namespace dew::train {

double training_flops_per_image(const ImageModel& model, diffusion::Objective objective) {
  return model.forward_flops() * (objective == diffusion::Objective::meanflow ? 4 : 3);
}

Tensor sample_images(const ImageModel& model, const diffusion::ObjectiveOptions& objective,
                     const ImageSampling& o) {
  namespace df = diffusion;
  const ImageConditioning c = model.conditioning();
  DEW_REQUIRE(o.per_class >= 1 && o.steps >= 1 && o.cfg >= 0,
              "[sample] {} per class, {} steps, guidance {}; expected at least 1, 1 and 0", o.per_class,
              o.steps, o.cfg);
  const bool meanflow = o.sampler == "meanflow";
  DEW_REQUIRE(meanflow == (c.time_inputs == 2),
              "[sample] sampler {} with a model of {} time input(s); MeanFlow's u(z, r, t) samples with the "
              "meanflow sampler, every other model with ddpm, ddim, euler, heun, dpmpp-2m or flow-euler",
              o.sampler, c.time_inputs);
  const df::Sampler sampler = meanflow ? df::Sampler::flow_euler : df::parse_sampler(o.sampler);
  std::vector<int64_t> classes = o.classes;
  if (classes.empty() && c.num_classes > 0)
    for (int64_t k = 0; k < c.num_classes; ++k) classes.push_back(k);
  for (int64_t k : classes)
    DEW_REQUIRE(k >= 0 && k < c.num_classes, "[sample] class {}; the model has classes 0 to {}", k,
                c.num_classes - 1);
  const bool guided = o.cfg != 1 && c.num_classes > 0;
  DEW_REQUIRE(
      !guided || c.class_dropout_prob > 0,
      "[sample] guidance {} needs the unconditional model: this one was trained without class dropout",
      o.cfg);
  std::vector<double> labels;
  for (int64_t k : classes)
    for (int64_t i = 0; i < o.per_class; ++i) labels.push_back(double(k));
  const int64_t N = c.num_classes > 0 ? int64_t(labels.size()) : o.per_class * 8;
  const DType dtype = model.parameters().begin()->second.dtype();
  const Device device = model.parameters().begin()->second.device();
  const Tensor cond = c.num_classes > 0 ? Tensor::from_values(labels, {N}, DType::i64).to(device) : Tensor();
  const Tensor null =
      c.num_classes > 0 ? Tensor::full({N}, double(c.num_classes), DType::i64).to(device) : Tensor();
  const auto times = [&](double t) { return Tensor::full({N}, t, DType::f32, device); };
  NoGrad no_grad;
  const Shape shape{N, c.in_channels, c.image_size, c.image_size};
  if (meanflow) {  // one network u(z, r, t) call a step; guidance mixes the two u's
    const df::AverageVelocity u = [&](const Tensor& z, double r, double t) {
      const Tensor conditional = model.forward(z, times(t), cond, times(r));
      if (!guided) return conditional;
      const Tensor unconditional = model.forward(z, times(t), null, times(r));
      return add(unconditional, mul(sub(conditional, unconditional), Tensor::full({}, o.cfg, dtype, device)));
    };
    return cast(
        df::meanflow_sample(u, o.steps, cast(df::initial_noise({0, 1, 1}, shape, o.seed), dtype).to(device)),
        DType::f32);
  }
  const auto network = [&](const Tensor& labels_of) -> df::Network {
    return [&model, &times, labels_of](const Tensor& x, const df::Level& l) {
      return model.forward(x, times(l.model_time), labels_of);
    };
  };
  df::Denoiser denoiser = df::objective_denoiser(network(cond), objective);
  if (guided) denoiser = df::guided(denoiser, df::objective_denoiser(network(null), objective), o.cfg);
  const std::vector<df::Level> levels = df::objective_levels(objective, o.steps, sampler);
  const Tensor x = cast(df::initial_noise(levels.front(), shape, o.seed), dtype).to(device);
  return cast(df::sample(sampler, denoiser, levels, x, df::seeded_noise(o.seed + 1)), DType::f32);
}

void save_image_grid(const Tensor& images, int64_t columns, const std::string& path) {
  DEW_REQUIRE(
      images.dim() == 4 && (images.size(1) == 1 || images.size(1) == 3) && images.size(0) > 0 && columns > 0,
      "[sample] images {} in {} columns; expected (N, 1 or 3, H, W) and columns >= 1", images.describe(),
      columns);
  constexpr int64_t kGap = 2;
  const int64_t N = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  const int64_t rows = (N + columns - 1) / columns, cols = std::min(N, columns);
  const int64_t width = cols * W + (cols + 1) * kGap, height = rows * H + (rows + 1) * kGap;
  std::vector<uint8_t> pixels(size_t(width * height * C), 0);
  const std::vector<double> v = images.to_f64_vector();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const double value = std::clamp(v[size_t(((n * C + c) * H + y) * W + x)], -1.0, 1.0);
          const int64_t py = kGap + (n / columns) * (H + kGap) + y,
                        px = kGap + (n % columns) * (W + kGap) + x;
          pixels[size_t((py * width + px) * C + c)] = uint8_t(std::lround((value + 1) * 127.5));
        }
  write_png(path, pixels, width, height, C);
}

}  // namespace dew::train
