// timestep_embedding: the float64 reference, each value a cosine or sine (magnitude 1; an odd D's
// last column exactly 0).
#include "ops/timestep_embedding/timestep_embedding.h"

namespace dew::ops {

std::vector<Truth> TimestepEmbedding::reference(const Args& a) {
  const int64_t B = a.t.size(0), D = a.dim;
  std::vector<double> m(size_t(B * D), 1.0);
  if (D % 2 == 1)
    for (int64_t b = 0; b < B; ++b) m[size_t(b * D + D - 1)] = 0.0;
  return {{Tensor::from_values(timestep_embedding_values(a.t.to_f64_vector(), D, a.max_period), {B, D},
                               DType::f64),
           Tensor::from_values(m, {B, D}, DType::f64), 1}};
}

}  // namespace dew::ops
