// timestep_embedding's rules from its outputs: with c = cos(t f) and s = sin(t f), dy/dt is
// (-s f, c f) (0 in an odd D's last column). The vjp sums the gradient against it over D; the jvp
// scales it by t'.
#include "ops/rules_common.h"
#include "ops/timestep_embedding/timestep_embedding.h"

namespace dew::ops {
namespace {

// dy/dt (B,D) from the output y, written with ops so that it is differentiable in turn.
Tensor embedding_slope(const Tensor& y, int64_t dim, double max_period) {
  const int64_t half = dim / 2;
  std::vector<double> f = timestep_frequencies(dim, max_period);
  f.insert(f.end(), f.begin(), f.end());
  std::vector<int64_t> sizes{half, half};
  if (dim % 2 == 1) sizes.push_back(1);
  const std::vector<Tensor> parts = split(y, sizes, -1);
  Tensor slope = mul(concat({neg(parts[1]), parts[0]}, -1),
                     Tensor::from_values(f, {2 * half}, y.dtype()).to(y.device()));
  return dim % 2 == 1 ? pad(slope, {0, 1}) : slope;
}

}  // namespace

Differentiation TimestepEmbedding::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> TimestepEmbedding::vjp_reads_outputs(const Args&) {
  return {true};
}

VjpRule TimestepEmbedding::vjp(const Args& a) {
  const int64_t dim = a.dim;
  const double max_period = a.max_period;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
    return {sum(mul(d[0], embedding_slope(outs[0], dim, max_period)), {-1})};
  };
}

std::vector<Tensor> TimestepEmbedding::jvp(const Args& a, const std::vector<Tensor>& outs,
                                           const std::vector<Tensor>& t) {
  if (!t[0].defined()) return {Tensor()};
  return {mul(t[0].unsqueeze(-1), embedding_slope(outs[0], a.dim, a.max_period))};
}

}  // namespace dew::ops
