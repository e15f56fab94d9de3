// timestep_embedding: validation, output rule, registry, cases, the frequencies and the public function.
#include "ops/timestep_embedding/timestep_embedding.h"

#include <cmath>

namespace dew::ops {

std::vector<double> timestep_frequencies(int64_t dim, double max_period) {
  const int64_t half = dim / 2;
  std::vector<double> f(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    f[size_t(i)] = std::exp(-std::log(max_period) * double(i) / double(half));
  return f;
}

std::vector<double> timestep_embedding_values(const std::vector<double>& t, int64_t dim, double max_period) {
  const int64_t B = int64_t(t.size()), half = dim / 2;
  const std::vector<double> f = timestep_frequencies(dim, max_period);
  std::vector<double> y(size_t(B * dim), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = t[size_t(b)] * f[size_t(i)];
      y[size_t(b * dim + i)] = std::cos(angle);
      y[size_t(b * dim + half + i)] = std::sin(angle);
    }
  return y;
}

std::vector<OutputSpec> TimestepEmbedding::infer(const Args& a) {
  DEW_REQUIRE(is_floating(a.dtype()) && a.t.dim() == 1,
              "[timestep_embedding] t is {}; expected a floating vector of times (B)", a.t.describe());
  DEW_REQUIRE(a.dim >= 2, "[timestep_embedding] dim {}; expected at least 2", a.dim);
  DEW_REQUIRE(a.max_period > 1 && std::isfinite(a.max_period),
              "[timestep_embedding] max_period {}; expected a finite number > 1", a.max_period);
  return {{{a.t.size(0), a.dim}, a.dtype()}};
}

const select::Registry<TimestepEmbeddingArgs>& TimestepEmbedding::registry() {
  static const select::Registry<TimestepEmbeddingArgs> r = [] {
    select::Registry<TimestepEmbeddingArgs> reg;
    add_timestep_embedding_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<TimestepEmbeddingArgs>> TimestepEmbedding::cases(std::string_view) {
  // Times as DDPM's integer steps (0..999) or flow matching's [0, 1] scaled by 1000.
  auto make = [](int64_t B, int64_t D, double scale) {
    return [=](DType t, RandomKey k) {
      TimestepEmbeddingArgs a;
      a.t = abs(random_input({B}, t, k, scale));
      a.dim = D;
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"dit_256", {"ci"}, all, make(16, 256, 300.0)},
          {"unit_times_odd", {"ci", "edge"}, all, make(5, 33, 1.0)},
          {"batch_256", {"bench"}, {DType::f32}, make(256, 256, 300.0)}};
}

}  // namespace dew::ops

namespace dew {

Tensor timestep_embedding(const Tensor& t, int64_t dim, double max_period) {
  ops::TimestepEmbeddingArgs a;
  a.t = t, a.dim = dim, a.max_period = max_period;
  return ops::run_op<ops::TimestepEmbedding>(a)[0];
}

}  // namespace dew
