// cross_entropy, portable: every floating dtype, one lane, libm's exp.
#define DEW_KERNEL_NS portable
#include "ops/cross_entropy/kernels.h"

namespace dew::ops {

void add_cross_entropy_portable(select::Registry<CrossEntropyArgs>& r) {
  r.add({"portable",
         {select::on_cpu<CrossEntropyArgs>()},
         [](const CrossEntropyArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) {
             portable::cross_entropy_rows<1, false, decltype(zero)>(a, outs);
           });
         }});
}

}  // namespace dew::ops
