// The optimizer ops on CUDA: registration (kernels in cuda.cu).
#include "ops/optimizer/cuda.h"

#include "ops/cuda_view.h"
#include "ops/optimizer/optimizer.h"

namespace dew::ops {

void add_optimizer_update_cuda(select::Registry<OptimizerUpdateArgs>& r) {
  r.add({"cuda.elementwise", cuda_requirements<OptimizerUpdateArgs>({DType::f64, DType::f32}),
         [](const OptimizerUpdateArgs& a, std::vector<Tensor>& outs) {
           const Tensor g = prepare_in_place(a, outs);
           const int device = a.device().index;
           const int64_t n = outs[0].numel();
           if (const auto* s = std::get_if<AdamWStep>(&a.step))
             return cuda_kernels::adamw_update(device, a.dtype(), outs[0].raw_data(), g.raw_data(),
                                               outs[1].raw_data(), outs[2].raw_data(), n,
                                               adamw_coefficients(*s));
           if (const auto* s = std::get_if<SgdStep>(&a.step))
             return cuda_kernels::sgd_update(device, a.dtype(), outs[0].raw_data(), g.raw_data(),
                                             outs.size() > 1 ? outs[1].raw_data() : nullptr, n,
                                             sgd_coefficients(*s, outs.size() > 1));
           cuda_kernels::lion_update(device, a.dtype(), outs[0].raw_data(), g.raw_data(), outs[1].raw_data(),
                                     n, lion_coefficients(std::get<LionStep>(a.step)));
         }});
}

void add_squared_norm_cuda(select::Registry<OneInputArgs>& r) {
  r.add({"cuda.block_sums", cuda_requirements<OneInputArgs>(kCudaFloating),
         [](const OneInputArgs& a, std::vector<Tensor>& outs) {
           const Tensor x = a.x.contiguous();
           const int64_t blocks = std::max<int64_t>(1, (x.numel() + kNormBlock - 1) / kNormBlock);
           Tensor partial = Tensor::empty({blocks}, DType::f64, a.device());
           cuda_kernels::squared_norm(a.device().index, a.dtype(), x.raw_data(), x.numel(),
                                      partial.data<double>(), outs[0].data<double>());
         }});
}

}  // namespace dew::ops
