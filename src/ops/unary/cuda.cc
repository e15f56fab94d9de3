// Unary ops on CUDA: registration (kernels in cuda.cu).
#include "ops/unary/cuda.h"

#include "ops/cuda_view.h"
#include "ops/unary/unary.h"

namespace dew::ops {

void add_unary_cuda(select::Registry<UnaryArgs>& r) {
  r.add({"cuda.elementwise", cuda_requirements<UnaryArgs>(kCudaFloating),
         [](const UnaryArgs& a, std::vector<Tensor>& outs) {
           cuda_kernels::unary(a.device().index, a.fn, a.dtype(), cuda_view(a.x), outs[0].raw_data());
         }});
}

}  // namespace dew::ops
