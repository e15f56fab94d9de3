// layer_norm and its backward, portable: every floating dtype, one lane.
#define DEW_KERNEL_NS portable
#include "ops/layer_norm/kernels.h"

namespace dew::ops {

void add_layer_norm_portable(select::Registry<LayerNormArgs>& r) {
  r.add(
      {"portable", {select::on_cpu<LayerNormArgs>()}, [](const LayerNormArgs& a, std::vector<Tensor>& outs) {
         visit_floating(a.dtype(), [&](auto zero) { portable::layer_norm<1, decltype(zero)>(a, outs); });
       }});
}

}  // namespace dew::ops
