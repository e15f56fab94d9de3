// The update rules AdamW, SGD and Lion: each parameter's step is one optimizer op (src/ops/optimizer),
// in the order torch.optim's single-tensor code takes its steps, each rounded to float32.
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/train.h>

#include "train/updates.h"

namespace dew::train {
namespace detail {

void check_adamw(const AdamWOptions& o) {
  DEW_REQUIRE(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps > 0,
              "[adamw] betas ({}, {}) and eps {}; expected betas in [0, 1) and eps > 0", o.beta1, o.beta2,
              o.eps);
}

}  // namespace detail

namespace {

using detail::for_each_gradient;

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Param> params, const AdamWOptions& o)
      : Optimizer(std::move(params), {"exp_avg", "exp_avg_sq"}), o_(o) {
    detail::check_adamw(o);
  }
  void step(double lr) override {
    ++steps_;
    for_each_gradient(params_, [&](size_t i, const Tensor& g) {
      adamw_update(params_[i].tensor, g, buffer_tensor(0, i), buffer_tensor(1, i),
                   detail::adamw_step(o_, steps_, lr * params_[i].lr_scale, params_[i].weight_decay));
    });
  }

 private:
  AdamWOptions o_;
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Param> params, const SgdOptions& o)
      : Optimizer(std::move(params), {"momentum_buffer"}), o_(o) {
    DEW_REQUIRE(o.momentum >= 0 && o.dampening >= 0 && (!o.nesterov || (o.momentum > 0 && o.dampening == 0)),
                "[sgd] momentum {}, dampening {}, nesterov {}; Nesterov needs momentum > 0 and no dampening",
                o.momentum, o.dampening, o.nesterov);
  }
  void step(double lr) override {
    const bool first = steps_++ == 0;
    for_each_gradient(params_, [&](size_t i, const Tensor& g) {
      Tensor no_buffer;
      sgd_update(params_[i].tensor, g, o_.momentum > 0 ? buffer_tensor(0, i) : no_buffer,
                 {.lr = lr * params_[i].lr_scale,
                  .momentum = o_.momentum,
                  .dampening = o_.dampening,
                  .weight_decay = params_[i].weight_decay,
                  .nesterov = o_.nesterov,
                  .first = first});
    });
  }

 private:
  SgdOptions o_;
};

// Lion (Chen et al., 2023): the sign of an interpolation of momentum and gradient, decoupled decay.
class Lion : public Optimizer {
 public:
  Lion(std::vector<Param> params, const LionOptions& o) : Optimizer(std::move(params), {"exp_avg"}), o_(o) {
    DEW_REQUIRE(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1,
                "[lion] betas ({}, {}); expected betas in [0, 1)", o.beta1, o.beta2);
  }
  void step(double lr) override {
    ++steps_;
    for_each_gradient(params_, [&](size_t i, const Tensor& g) {
      lion_update(params_[i].tensor, g, buffer_tensor(0, i),
                  {.lr = lr * params_[i].lr_scale,
                   .beta1 = o_.beta1,
                   .beta2 = o_.beta2,
                   .weight_decay = params_[i].weight_decay});
    });
  }

 private:
  LionOptions o_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adamw(std::vector<Param> params, const AdamWOptions& options) {
  return std::make_unique<AdamW>(std::move(params), options);
}
std::unique_ptr<Optimizer> make_sgd(std::vector<Param> params, const SgdOptions& options) {
  return std::make_unique<Sgd>(std::move(params), options);
}
std::unique_ptr<Optimizer> make_lion(std::vector<Param> params, const LionOptions& options) {
  return std::make_unique<Lion>(std::move(params), options);
}

}  // namespace dew::train
