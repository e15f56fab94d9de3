// timestep_embedding: the sinusoidal embedding of diffusion times t (B) as (B,D) — cos(t f_i) in the
// first D/2 columns, sin(t f_i) in the next D/2, f_i = max_period^(-i/(D/2)) (DiT's, diffusers'
// get_timestep_embedding with flip_sin_to_cos and no frequency shift); an odd D's last column is 0.
// Angles and their cosines are computed in double and rounded once to t's dtype.
#pragma once

#include <dew/image_ops.h>

#include "ops/op.h"

namespace dew::ops {

struct TimestepEmbeddingArgs {
  Tensor t;  // (B)
  int64_t dim = 256;
  double max_period = 10000;
  DType dtype() const { return t.dtype(); }
  Device device() const { return t.device(); }
  std::vector<const Tensor*> inputs() const { return {&t}; }
  std::vector<Tensor*> mutable_inputs() { return {&t}; }
};

struct TimestepEmbedding {
  DEW_OP_TYPE_MEMBERS(TimestepEmbeddingArgs);
  static std::string_view name(const Args&) { return "timestep_embedding"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

// f_i for i < D/2, in double: the one definition the reference, the kernel and the rules share.
std::vector<double> timestep_frequencies(int64_t dim, double max_period);
// The embedding (B*D values, row-major) in double: the reference's values, which the portable
// implementation rounds once to the output dtype.
std::vector<double> timestep_embedding_values(const std::vector<double>& t, int64_t dim, double max_period);

void add_timestep_embedding_portable(select::Registry<TimestepEmbeddingArgs>& r);

}  // namespace dew::ops
