// cast on CUDA: registration (kernels in cuda.cu). Every dtype pair.
#include "ops/cast/cuda.h"

#include "ops/cast/cast.h"
#include "ops/cuda_view.h"

namespace dew::ops {

void add_cast_cuda(select::Registry<CastArgs>& r) {
  r.add({"cuda.elementwise",
         cuda_requirements<CastArgs>({DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64, DType::i32,
                                      DType::u8, DType::boolean}),
         [](const CastArgs& a, std::vector<Tensor>& outs) {
           cuda_kernels::cast(a.device().index, a.x.dtype(), a.to, cuda_view(a.x), outs[0].raw_data());
         }});
}

}  // namespace dew::ops
