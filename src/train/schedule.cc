// Learning-rate schedules (train.h) and clipping by global norm.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/parallel.h>
#include <dew/train.h>

#include <cmath>
#include <numbers>

#include "train/data_parallel.h"

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
  return clip_grad_norm(params, max_norm, nullptr, {});
}

double clip_grad_norm(const std::vector<Param>& params, double max_norm, parallel::Communicator* parts_on,
                      const std::vector<bool>& counted) {
  DEW_REQUIRE(max_norm > 0, "[clip_grad_norm] max_norm {}; expected a positive norm", max_norm);
  NoGrad no_grad;
  std::vector<Tensor> grads;    // share the gradients' storage: clipping scales them in place
  std::vector<Tensor> squares;  // f64, one per parameter (0 without a gradient), read at once
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor g = params[i].tensor.grad();
    if (g.defined()) grads.push_back(g);
    const bool counts = g.defined() && (counted.empty() || counted[i]);
    squares.push_back(counts ? squared_norm(g).reshape({1})
                             : Tensor::zeros({1}, DType::f64, params[i].tensor.device()));
  }
  double norm = 0;
  if (!squares.empty()) {
    Tensor each = concat(squares, 0).to(Device::cpu()).contiguous();
    // Sharded gradients: each parameter's square comes from the one rank holding it; adding the others'
    // zeros keeps it exact, and every rank then adds the same values in the same order. Tensor
    // parallelism: a split parameter's squares add over the group, a whole one's come from one rank.
    if (parts_on) parts_on->all_reduce_sum(each);
    double total = 0;
    for (const double v : each.to_f64_vector()) total += v;  // in parameter order
    norm = std::sqrt(total);
  }
  const double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1)
    for (Tensor& g : grads) g.copy_from(mul(g, Tensor::full({}, coefficient, g.dtype(), g.device())));
  return norm;
}

}  // namespace dew::train
