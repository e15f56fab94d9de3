// softmax, log_softmax and cumsum, portable: every floating dtype, one lane, libm's exp.
#define DEW_KERNEL_NS portable
#include "ops/along_axis/kernels.h"

namespace dew::ops {

void add_along_axis_portable(select::Registry<AlongAxisArgs>& r) {
  r.add(
      {"portable", {select::on_cpu<AlongAxisArgs>()}, [](const AlongAxisArgs& a, std::vector<Tensor>& outs) {
         visit_floating(a.dtype(),
                        [&](auto zero) { portable::along_axis<1, false, decltype(zero)>(a, outs[0]); });
       }});
}

}  // namespace dew::ops
