// attention, its backward and its jvp, portable: every floating dtype, one lane, libm's exp.
#define DEW_KERNEL_NS portable
#include "ops/attention/kernels.h"

namespace dew::ops {

void add_attention_portable(select::Registry<AttentionArgs>& r) {
  r.add(
      {"portable", {select::on_cpu<AttentionArgs>()}, [](const AttentionArgs& a, std::vector<Tensor>& outs) {
         visit_floating(a.dtype(),
                        [&](auto zero) { portable::attention_forward<1, false, decltype(zero)>(a, outs); });
       }});
}

void add_attention_backward_portable(select::Registry<AttentionBackwardArgs>& r) {
  r.add({"portable",
         {select::on_cpu<AttentionBackwardArgs>()},
         [](const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) {
             portable::attention_backward<1, false, decltype(zero)>(a, outs);
           });
         }});
}

void add_attention_jvp_portable(select::Registry<AttentionJvpArgs>& r) {
  r.add({"portable",
         {select::on_cpu<AttentionJvpArgs>()},
         [](const AttentionJvpArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(),
                          [&](auto zero) { portable::attention_jvp<1, false, decltype(zero)>(a, outs); });
         }});
}

}  // namespace dew::ops
