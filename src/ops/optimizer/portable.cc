// The optimizer ops, portable: f32 and f64 updates, squared_norm of every floating dtype, at baseline
// x86-64.
#define DEW_KERNEL_NS portable
#include "ops/optimizer/kernels.h"

namespace dew::ops {

void add_optimizer_update_portable(select::Registry<OptimizerUpdateArgs>& r) {
  r.add({"portable",
         {select::on_cpu<OptimizerUpdateArgs>(),
          select::dtype_in<OptimizerUpdateArgs>({DType::f32, DType::f64})},
         [](const OptimizerUpdateArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             portable::optimizer_update<float>(a, outs);
           else
             portable::optimizer_update<double>(a, outs);
         }});
}

void add_squared_norm_portable(select::Registry<OneInputArgs>& r) {
  r.add({"portable", {select::on_cpu<OneInputArgs>()}, [](const OneInputArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(), [&](auto zero) { portable::squared_norm<decltype(zero)>(a, outs); });
         }});
}

}  // namespace dew::ops
