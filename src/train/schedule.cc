// Learning-rate schedules (train.h) and clipping by global norm.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include <cmath>
#include <numbers>

namespace dew::train {

double LrSchedule::at(int64_t step) const {
  DEW_REQUIRE(
      peak_lr > 0 && total_steps >= 1 && warmup_steps >= 0 && warmup_steps <= total_steps &&
          min_lr_ratio >= 0 && min_lr_ratio <= 1 && decay_fraction >= 0 && decay_fraction <= 1,
      "[schedule] peak_lr {}, warmup {} of {} steps, min_lr_ratio {}, decay_fraction {}; expected peak_lr "
      "> 0, 0 <= warmup <= total, ratios in [0, 1]",
      peak_lr, warmup_steps, total_steps, min_lr_ratio, decay_fraction);
  if (step < warmup_steps) return peak_lr * double(step + 1) / double(warmup_steps);
  const double floor = peak_lr * min_lr_ratio;
  const auto progress = [](int64_t done, int64_t span) {
    return span <= 0 ? 1.0 : std::min(1.0, double(done) / double(span));
  };
  switch (shape) {
    case Shape::constant:
      return peak_lr;
    case Shape::linear:
      return peak_lr - (peak_lr - floor) * progress(step - warmup_steps, total_steps - warmup_steps);
    case Shape::cosine: {
      const double p = progress(step - warmup_steps, total_steps - warmup_steps);
      return floor + (peak_lr - floor) * 0.5 * (1 + std::cos(std::numbers::pi * p));
    }
    case Shape::wsd: {
      const int64_t decay_steps = int64_t(std::llround(decay_fraction * double(total_steps)));
      const int64_t decay_start = std::max(warmup_steps, total_steps - decay_steps);
      if (step < decay_start) return peak_lr;
      return peak_lr - (peak_lr - floor) * progress(step - decay_start, total_steps - decay_start);
    }
  }
  return peak_lr;
}

double clip_grad_norm(const std::vector<Param>& params, double max_norm) {
  DEW_REQUIRE(max_norm > 0, "[clip_grad_norm] max_norm {}; expected a positive norm", max_norm);
  constexpr int64_t kBlock = 1 << 14;  // partial sums per fixed block, added in order
  double total = 0;
  std::vector<Tensor> grads;
  for (const Param& p : params) {
    const Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    DEW_REQUIRE(g.dtype() == DType::f32 && g.is_contiguous(),
                "[clip_grad_norm] the gradient of {} is {}; expected a contiguous f32 tensor", p.name,
                g.describe());
    grads.push_back(g);                          // shares the gradient's storage: clipping scales it in place
    if (g.device().kind != Device::Kind::cpu) {  // on a GPU: the sum of squares there, read back
      NoGrad no_grad;
      total += sum(square(g)).to_f64_vector()[0];
      continue;
    }
    const float* x = grads.back().data<float>();
    const int64_t n = grads.back().numel(), blocks = (n + kBlock - 1) / kBlock;
    std::vector<double> partial(size_t(blocks), 0.0);
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double s = 0;
        for (int64_t k = b * kBlock; k < std::min(n, (b + 1) * kBlock); ++k) s += double(x[k]) * double(x[k]);
        partial[size_t(b)] = s;
      }
    });
    for (double s : partial) total += s;
  }
  const double norm = std::sqrt(total);
  const double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1) {
    const float c = float(coefficient);
    for (Tensor& g : grads) {
      if (g.device().kind != Device::Kind::cpu) {
        NoGrad no_grad;
        g.copy_from(mul(g, Tensor::full({}, c, DType::f32, g.device())));
        continue;
      }
      float* x = g.data<float>();
      parallel_for(g.numel(), 1 << 14, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) x[k] *= c;
      });
    }
  }
  return norm;
}

}  // namespace dew::train
