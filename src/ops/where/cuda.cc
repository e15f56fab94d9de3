// where on CUDA: registration (kernel in cuda.cu). Broadcasting is by expand(): stride-0 views.
#include "ops/where/cuda.h"

#include "ops/cuda_view.h"
#include "ops/where/where.h"

namespace dew::ops {

void add_where_cuda(select::Registry<WhereArgs>& r) {
  r.add({"cuda.elementwise",
         cuda_requirements<WhereArgs>({DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64,
                                       DType::i32, DType::u8, DType::boolean}),
         [](const WhereArgs& a, std::vector<Tensor>& outs) {
           const Shape& s = outs[0].shape();
           cuda_kernels::where(a.device().index, dtype_size(a.dtype()), cuda_view(a.condition.expand(s)),
                               cuda_view(a.a.expand(s)), cuda_view(a.b.expand(s)), outs[0].raw_data());
         }});
}

}  // namespace dew::ops
