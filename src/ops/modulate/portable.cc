// modulate and gated_add, portable: every floating dtype at baseline x86-64.
#define DEW_KERNEL_NS portable
#include "ops/modulate/kernels.h"

namespace dew::ops {

void add_modulate_portable(select::Registry<ModulateArgs>& r) {
  r.add({"portable", {select::on_cpu<ModulateArgs>()}, [](const ModulateArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) { portable::modulate_rows<decltype(zero)>(a, outs[0]); });
         }});
}

}  // namespace dew::ops
