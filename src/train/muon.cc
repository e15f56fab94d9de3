// Muon (Jordan et al., 2024): momentum for each 2-D hidden matrix, orthogonalized by a quintic
// Newton-Schulz iteration, with Moonlight's scaling (Liu et al., 2025: the update times
// 0.2·sqrt(max(rows, cols)), so that its RMS matches AdamW's and one learning rate serves both) and
// decoupled weight decay. Embeddings, the head, norms and biases take AdamW's update instead.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/train.h>

#include "train/updates.h"

#include <cmath>

namespace dew::train {
namespace {

// Newton-Schulz coefficients from Keller Jordan's Muon: five steps bring every singular value of
// the normalized matrix into about [0.7, 1.2].
constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;

Tensor scalar(double value, const Tensor& like) {
  return Tensor::full({}, value, like.dtype(), like.device());
}

// The approximate orthogonal factor U Vᵀ of x = U S Vᵀ (rows, cols), iterated on the wide side.
Tensor newton_schulz(const Tensor& x, int steps) {
  const bool tall = x.shape()[0] > x.shape()[1];
  Tensor X = (tall ? x.transpose(0, 1) : x).contiguous();
  const double norm = std::sqrt(squared_norm(X).to_f64_vector()[0]);
  X = mul(X, scalar(float(1 / (norm + 1e-7)), X));
  for (int s = 0; s < steps; ++s) {
    const Tensor A = matmul(X, X, {.transpose_b = true});  // X Xᵀ (r, r)
    const Tensor B = add(mul(scalar(kB, A), A), mul(scalar(kC, A), matmul(A, A)));
    X = add(mul(scalar(kA, X), X), matmul(B, X));
  }
  return tall ? X.transpose(0, 1).contiguous() : X;
}

bool orthogonalized(const Param& p) {
  return p.tensor.dim() == 2 && !is_embedding_table(p.name) && p.name.find("lm_head") == std::string::npos;
}

class Muon : public Optimizer {
 public:
  Muon(std::vector<Param> params, const MuonOptions& o)
      : Optimizer(std::move(params), {"momentum_buffer", "exp_avg", "exp_avg_sq"}), o_(o) {
    DEW_REQUIRE(o.momentum >= 0 && o.momentum < 1 && o.ns_steps >= 1 && o.ns_steps <= 20,
                "[muon] momentum {} and ns_steps {}; expected momentum in [0, 1) and 1 to 20 steps",
                o.momentum, o.ns_steps);
    detail::check_adamw(o.adamw);
  }
  void step(double lr) override {
    ++steps_;
    NoGrad no_grad;
    detail::for_each_gradient(params_, [&](size_t i, const Tensor& g) {
      const double group_lr = lr * params_[i].lr_scale;
      Tensor& p = params_[i].tensor;
      if (!orthogonalized(params_[i])) {
        adamw_update(p, g, buffer_tensor(1, i), buffer_tensor(2, i),
                     detail::adamw_step(o_.adamw, steps_, group_lr, params_[i].weight_decay));
        return;
      }
      Tensor& momentum = buffer_tensor(0, i);
      const Tensor mu = scalar(float(o_.momentum), g);
      momentum.copy_from(add(mul(mu, momentum), g));
      const Tensor update = o_.nesterov ? add(g, mul(mu, momentum)) : momentum;
      const Tensor orthogonal = newton_schulz(update, o_.ns_steps);
      const Shape& shape = p.shape();
      const double decay = 1 - group_lr * params_[i].weight_decay,
                   rate = group_lr * 0.2 * std::sqrt(double(std::max(shape[0], shape[1])));
      p.copy_from(sub(mul(p, scalar(float(decay), p)), mul(scalar(float(rate), p), orthogonal)));
    });
  }

 private:
  MuonOptions o_;
};

}  // namespace

std::unique_ptr<Optimizer> make_muon(std::vector<Param> params, const MuonOptions& options) {
  return std::make_unique<Muon>(std::move(params), options);
}

}  // namespace dew::train
