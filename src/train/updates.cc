// The update rules. Each runs elementwise over a parameter on the thread pool; an element's result
// depends on that element alone, so it is the same at any thread count. AdamW and SGD take their
// steps in the order torch.optim's single-tensor code does, each rounded to float32.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include "train/updates.h"

#include <cmath>

namespace dew::train {
namespace detail {

void check_adamw(const AdamWOptions& o) {
  DEW_REQUIRE(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps > 0,
              "[adamw] betas ({}, {}) and eps {}; expected betas in [0, 1) and eps > 0", o.beta1, o.beta2,
              o.eps);
}

namespace {

// One step's constants, each rounded to f32 once, shared by the host loop and the ops.
struct AdamWConstants {
  float decay, w1, beta2, w2, root, eps, step_size;
  AdamWConstants(const AdamWOptions& o, int64_t step, double lr, double weight_decay) {
    const double bc1 = 1 - std::pow(o.beta1, double(step)),
                 bc2_sqrt = std::sqrt(1 - std::pow(o.beta2, double(step)));
    decay = float(1 - lr * weight_decay), w1 = float(1 - o.beta1), beta2 = float(o.beta2),
    w2 = float(1 - o.beta2), root = float(bc2_sqrt), eps = float(o.eps), step_size = float(-(lr / bc1));
  }
};

}  // namespace

void adamw_update_by_ops(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWOptions& o,
                         int64_t step, double lr, double weight_decay) {
  const AdamWConstants k(o, step, lr, weight_decay);
  NoGrad no_grad;
  auto c = [&](float x) { return Tensor::full({}, x, DType::f32, p.device()); };
  // The host loop's expressions, in its order.
  const Tensor mean = add(m, mul(c(k.w1), sub(g, m)));
  const Tensor second = add(mul(v, c(k.beta2)), mul(mul(c(k.w2), g), g));
  const Tensor denom = add(div(sqrt(second), c(k.root)), c(k.eps));
  const Tensor next = add(mul(p, c(k.decay)), mul(c(k.step_size), div(mean, denom)));
  m.copy_from(mean);
  v.copy_from(second);
  p.copy_from(next);
}

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWOptions& o,
                  int64_t step, double lr, double weight_decay) {
  const AdamWConstants k(o, step, lr, weight_decay);
  const float decay = k.decay, w1 = k.w1, beta2 = k.beta2, w2 = k.w2, root = k.root, eps = k.eps,
              step_size = k.step_size;
  // By value and through local restrict pointers: the loop vectorizes only once the compiler sees
  // that no store reaches the constants or another array.
  parallel_for(n, kGrain, [=](int64_t begin, int64_t end) {
    float* __restrict pk = p + begin;
    const float* __restrict gk = g + begin;
    float* __restrict mk = m + begin;
    float* __restrict vk = v + begin;
    for (int64_t k = 0; k < end - begin; ++k) {
      const float decayed = pk[k] * decay, mean = mk[k] + w1 * (gk[k] - mk[k]);
      const float second = vk[k] * beta2 + w2 * gk[k] * gk[k];
      const float denom = std::sqrt(second) / root + eps;
      mk[k] = mean;
      vk[k] = second;
      pk[k] = decayed + step_size * (mean / denom);
    }
  });
}

}  // namespace detail

namespace {

using detail::for_each_gradient;
using detail::kGrain;

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Param> params, const AdamWOptions& o)
      : Optimizer(std::move(params), {"exp_avg", "exp_avg_sq"}), o_(o) {
    detail::check_adamw(o);
  }
  void step(double lr) override {
    ++steps_;
    for_each_gradient(
        params_,
        [&](size_t i, float* p, const float* g, int64_t n) {
          detail::adamw_update(p, g, buffer(0, i), buffer(1, i), n, o_, steps_, lr * params_[i].lr_scale,
                               params_[i].weight_decay);
        },
        [&](size_t i, const Tensor& g) {  // a parameter on a GPU: the same update by ops there
          detail::adamw_update_by_ops(params_[i].tensor, g, buffer_tensor(0, i), buffer_tensor(1, i), o_,
                                      steps_, lr * params_[i].lr_scale, params_[i].weight_decay);
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
    for_each_gradient(params_, [&](size_t i, float* p, const float* g, int64_t n) {
      const float wd = float(params_[i].weight_decay), mu = float(o_.momentum),
                  keep = float(1 - o_.dampening), rate = float(-(lr * params_[i].lr_scale));
      float* buf = o_.momentum > 0 ? buffer(0, i) : nullptr;
      parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          float d = wd != 0 ? g[k] + wd * p[k] : g[k];
          if (buf) {
            buf[k] = first ? d : buf[k] * mu + keep * d;
            d = o_.nesterov ? d + mu * buf[k] : buf[k];
          }
          p[k] = p[k] + rate * d;
        }
      });
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
    for_each_gradient(params_, [&](size_t i, float* p, const float* g, int64_t n) {
      const double group_lr = lr * params_[i].lr_scale;
      const float decay = float(1 - group_lr * params_[i].weight_decay), rate = float(group_lr),
                  b1 = float(o_.beta1), b2 = float(o_.beta2);
      float* m = buffer(0, i);
      parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const float c = b1 * m[k] + (1 - b1) * g[k];
          const float sign = float((c > 0) - (c < 0));
          p[k] = p[k] * decay - rate * sign;
          m[k] = b2 * m[k] + (1 - b2) * g[k];
        }
      });
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
