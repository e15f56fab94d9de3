// rope, portable: every floating dtype at baseline x86-64.
#define DEW_KERNEL_NS portable
#include "ops/rope/kernels.h"

namespace dew::ops {

void add_rope_portable(select::Registry<RopeArgs>& r) {
  r.add({"portable", {select::on_cpu<RopeArgs>()}, [](const RopeArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) {
             using T = decltype(zero);
             portable::rope_rows<T, AccumulatorOf<T>>(a, outs[0]);
           });
         }});
}

}  // namespace dew::ops
