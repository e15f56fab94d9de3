// rms_norm and its backward, portable: every floating dtype, one lane (baseline x86-64).
#define DEW_KERNEL_NS portable
#include "ops/rms_norm/kernels.h"

namespace dew::ops {

void add_rms_norm_portable(select::Registry<RmsNormArgs>& r) {
  r.add({"portable", {select::on_cpu<RmsNormArgs>()}, [](const RmsNormArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) {
             using T = decltype(zero);
             portable::rms_norm_forward<1, T, AccumulatorOf<T>>(a, outs[0], outs[1]);
           });
         }});
}

void add_rms_norm_backward_portable(select::Registry<RmsNormBackwardArgs>& r) {
  r.add({"portable",
         {select::on_cpu<RmsNormBackwardArgs>()},
         [](const RmsNormBackwardArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) {
             using T = decltype(zero);
             portable::rms_norm_backward<1, T, AccumulatorOf<T>>(a, outs);
           });
         }});
}

}  // namespace dew::ops
