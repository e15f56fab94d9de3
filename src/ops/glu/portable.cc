// Gated units, portable: every floating dtype at baseline x86-64.
#define DEW_KERNEL_NS portable
#include "ops/glu/kernels.h"

namespace dew::ops {

void add_glu_portable(select::Registry<GluArgs>& r) {
  r.add({"portable", {select::on_cpu<GluArgs>()}, [](const GluArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) { portable::glu<false, decltype(zero)>(a, outs); });
         }});
}

}  // namespace dew::ops
