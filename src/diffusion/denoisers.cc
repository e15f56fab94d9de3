// Denoisers from what networks predict, classifier-free guidance, and the noise samplers draw.
#include <dew/diffusion.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cmath>

#include <memory>
#include "diffusion/detail.h"

namespace dew::diffusion {
namespace {

using detail::scaled;

}  // namespace

Denoiser denoiser_from(Network network, Prediction prediction, double sigma_data) {
  return [network = std::move(network), prediction, sigma_data](const Tensor& x, const Level& l) -> Tensor {
    if (prediction == Prediction::edm) {
      DEW_REQUIRE(l.a == 1,
                  "[diffusion] EDM's preconditioning is defined on the ve path (a = 1); this level has a {}",
                  l.a);
      const double sd2 = sigma_data * sigma_data, s2 = l.s * l.s;
      const Tensor out = network(scaled(x, 1 / std::sqrt(s2 + sd2)), l);
      return add(scaled(x, sd2 / (s2 + sd2)), scaled(out, l.s * sigma_data / std::sqrt(s2 + sd2)));
    }
    const Tensor out = network(x, l);
    switch (prediction) {
      case Prediction::edm:  // handled above
      case Prediction::sample:
        return out;
      case Prediction::epsilon:  // x = a x0 + s eps
        DEW_REQUIRE(l.a > 0,
                    "[diffusion] an epsilon-predicting network at a level with a = 0 (pure noise) "
                    "cannot estimate x0; start the levels below pure noise");
        return scaled(sub(x, scaled(out, l.s)), 1 / l.a);
      case Prediction::v:  // v = a eps - s x0 with a^2 + s^2 = 1: x0 = a x - s v
        DEW_REQUIRE(
            std::fabs(l.a * l.a + l.s * l.s - 1) < 1e-9,
            "[diffusion] v-prediction is defined on a vp path (a^2 + s^2 = 1); this level has a {}, s {}",
            l.a, l.s);
        return sub(scaled(x, l.a), scaled(out, l.s));
      case Prediction::velocity:  // v = eps - x0 on a flow path: x0 = x - t v
        DEW_REQUIRE(std::fabs(l.a + l.s - 1) < 1e-9,
                    "[diffusion] velocity prediction is defined on a flow path (a + s = 1); this level has a "
                    "{}, s {}",
                    l.a, l.s);
        return sub(x, scaled(out, l.s));
    }
    fail("[diffusion] unknown prediction");
  };
}

Denoiser guided(Denoiser conditional, Denoiser unconditional, double scale) {
  return [=](const Tensor& x, const Level& l) {
    const Tensor u = unconditional(x, l);
    return add(u, scaled(sub(conditional(x, l), u), scale));
  };
}

NoiseSource seeded_noise(uint64_t seed) {
  auto draws = std::make_shared<uint64_t>(0);
  return [seed, draws](const Tensor& like) {
    Tensor z = Tensor::empty(like.shape(), like.dtype());
    fill_normal(z, {seed, 0x6e6f697365ull + (*draws)++}, 0, 1);  // "noise" + the draw's number
    return z.to(like.device());
  };
}

Tensor initial_noise(const Level& first, const Shape& shape, uint64_t seed, DType dtype) {
  Tensor z = Tensor::empty(shape, dtype);
  fill_normal(z, {seed, 0x696e6974ull}, 0, first.s);  // "init"
  return z;
}

}  // namespace dew::diffusion
