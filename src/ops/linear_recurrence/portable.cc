// linear_recurrence and its derivative ops, portable: every floating dtype, one lane (baseline x86-64),
// token by token (kernels.h).
#define DEW_KERNEL_NS portable
#include "ops/linear_recurrence/kernels.h"

namespace dew::ops {

void add_linear_recurrence_portable(select::Registry<LinearRecurrenceArgs>& r) {
  r.add({"portable",
         {select::on_cpu<LinearRecurrenceArgs>()},
         [](const LinearRecurrenceArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) { portable::forward<1, decltype(zero)>(a, outs); });
         }});
}

void add_linear_recurrence_backward_portable(select::Registry<LinearRecurrenceBackwardArgs>& r) {
  r.add({"portable",
         {select::on_cpu<LinearRecurrenceBackwardArgs>()},
         [](const LinearRecurrenceBackwardArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) { portable::backward<1, decltype(zero)>(a, outs); });
         }});
}

void add_linear_recurrence_jvp_portable(select::Registry<LinearRecurrenceJvpArgs>& r) {
  r.add({"portable",
         {select::on_cpu<LinearRecurrenceJvpArgs>()},
         [](const LinearRecurrenceJvpArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) { portable::tangent<1, decltype(zero)>(a, outs); });
         }});
}

}  // namespace dew::ops
