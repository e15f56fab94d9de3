// The optimizer ops for each CPU tier (cpu.avx2, cpu.avx512: built once per tier, NOTE [instruction-set
// regions]): f32 updates; squared_norm of f32, bf16 and f16. The same bits as the portable path.
#include "ops/cpu_tier.h"
#include "ops/optimizer/kernels.h"

namespace dew::ops::DEW_KERNEL_NS {

void add_optimizer_update_cpu(select::Registry<OptimizerUpdateArgs>& r) {
  r.add({kCpuImplName,
         {select::on_cpu<OptimizerUpdateArgs>(), cpu_has_tier<OptimizerUpdateArgs>(),
          select::dtype_in<OptimizerUpdateArgs>({DType::f32})},
         [](const OptimizerUpdateArgs& a, std::vector<Tensor>& outs) { optimizer_update<float>(a, outs); }});
}

void add_squared_norm_cpu(select::Registry<OneInputArgs>& r) {
  add_cpu_f32_bf16<OneInputArgs, true>(r, [](auto t, const OneInputArgs& a, std::vector<Tensor>& outs) {
    squared_norm<decltype(t)>(a, outs);
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
