// Muon (Jordan et al., 2024): momentum for each 2-D hidden matrix, orthogonalized by a quintic
// Newton-Schulz iteration, with Moonlight's scaling (Liu et al., 2025: the update times
// 0.2·sqrt(max(rows, cols)), so that its RMS matches AdamW's and one learning rate serves both) and
// decoupled weight decay. Embeddings, the head, norms and biases take AdamW's update instead.
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include "train/updates.h"

#include <cmath>

namespace dew::train {
namespace {

// Newton-Schulz coefficients from Keller Jordan's Muon: five steps bring every singular value of
// the normalized matrix into about [0.7, 1.2].
constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;

// The approximate orthogonal factor U Vᵀ of x = U S Vᵀ (rows, cols), iterated on the wide side.
Tensor newton_schulz(const Tensor& x, int steps) {
  const bool tall = x.shape()[0] > x.shape()[1];
  Tensor X = (tall ? x.transpose(0, 1) : x).contiguous().clone();
  double squares = 0;
  for (int64_t k = 0; k < X.numel(); ++k) squares += double(X.data<float>()[k]) * double(X.data<float>()[k]);
  const float inverse = float(1 / (std::sqrt(squares) + 1e-7));
  for (int64_t k = 0; k < X.numel(); ++k) X.data<float>()[k] *= inverse;
  for (int s = 0; s < steps; ++s) {
    const Tensor A = matmul(X, X, {.transpose_b = true});  // X Xᵀ (r, r)
    Tensor B = matmul(A, A);
    float* b = B.data<float>();
    const float* a = A.data<float>();
    for (int64_t k = 0; k < B.numel(); ++k) b[k] = kB * a[k] + kC * b[k];
    Tensor next = matmul(B, X);
    float* n = next.data<float>();
    const float* x_ = X.data<float>();
    for (int64_t k = 0; k < next.numel(); ++k) n[k] = kA * x_[k] + n[k];
    X = next;
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
    detail::for_each_gradient(params_, [&](size_t i, float* p, const float* g, int64_t n) {
      const double group_lr = lr * params_[i].lr_scale;
      if (!orthogonalized(params_[i])) {
        detail::adamw_update(p, g, buffer(1, i), buffer(2, i), n, o_.adamw, steps_, group_lr,
                             params_[i].weight_decay);
        return;
      }
      const Shape& shape = params_[i].tensor.shape();
      float* momentum = buffer(0, i);
      Tensor update = Tensor::empty(shape, DType::f32);
      float* u = update.data<float>();
      const float mu = float(o_.momentum);
      for (int64_t k = 0; k < n; ++k) {
        momentum[k] = mu * momentum[k] + g[k];
        u[k] = o_.nesterov ? g[k] + mu * momentum[k] : momentum[k];
      }
      const Tensor orthogonal = newton_schulz(update, o_.ns_steps);
      const float* o = orthogonal.data<float>();
      const float decay = float(1 - group_lr * params_[i].weight_decay),
                  rate = float(group_lr * 0.2 * std::sqrt(double(std::max(shape[0], shape[1]))));
      parallel_for(n, detail::kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) p[k] = p[k] * decay - rate * o[k];
      });
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
