// paged_attention, portable: every floating dtype, one lane, libm's exp; the gate's reference arm.
#define DEW_KERNEL_NS portable
#include "ops/attention/paged_kernels.h"

namespace dew::ops {

void add_paged_attention_portable(select::Registry<PagedAttentionArgs>& r) {
  r.add({"portable",
         {select::on_cpu<PagedAttentionArgs>()},
         [](const PagedAttentionArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) {
             portable::paged_attention_forward<1, false, decltype(zero)>(a, outs);
           });
         }});
}

}  // namespace dew::ops
