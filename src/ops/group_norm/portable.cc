// group_norm and group_norm_backward, portable: every floating dtype, one lane per reduction (the
// gate's reference arm).
#define DEW_KERNEL_NS portable
#include "ops/group_norm/kernels.h"

namespace dew::ops {

void add_group_norm_portable(select::Registry<GroupNormArgs>& r) {
  r.add(
      {"portable", {select::on_cpu<GroupNormArgs>()}, [](const GroupNormArgs& a, std::vector<Tensor>& outs) {
         visit_floating(a.dtype(), [&](auto zero) { portable::group_norm_rows<1, decltype(zero)>(a, outs); });
       }});
}

void add_group_norm_backward_portable(select::Registry<GroupNormBackwardArgs>& r) {
  r.add({"portable",
         {select::on_cpu<GroupNormBackwardArgs>()},
         [](const GroupNormBackwardArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(),
                          [&](auto zero) { portable::group_norm_backward_rows<1, decltype(zero)>(a, outs); });
         }});
}

}  // namespace dew::ops
