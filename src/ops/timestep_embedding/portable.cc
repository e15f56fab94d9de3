// timestep_embedding, portable: the values in double, rounded once to the output dtype (B x D values:
// never a hot loop, so no vector tier).
#include "ops/timestep_embedding/timestep_embedding.h"

namespace dew::ops {

void add_timestep_embedding_portable(select::Registry<TimestepEmbeddingArgs>& r) {
  r.add({"portable",
         {select::on_cpu<TimestepEmbeddingArgs>()},
         [](const TimestepEmbeddingArgs& a, std::vector<Tensor>& outs) {
           outs[0].copy_from(
               Tensor::from_values(timestep_embedding_values(a.t.to_f64_vector(), a.dim, a.max_period),
                                   outs[0].shape(), outs[0].dtype()));
         }});
}

}  // namespace dew::ops
