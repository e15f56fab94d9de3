// The gated linear units on CUDA: registration (kernels in cuda.cu).
#include "ops/glu/cuda.h"

#include "ops/cuda_view.h"
#include "ops/glu/glu.h"

namespace dew::ops {

void add_glu_cuda(select::Registry<GluArgs>& r) {
  r.add({"cuda.elementwise", cuda_requirements<GluArgs>(kCudaFloating),
         [](const GluArgs& a, std::vector<Tensor>& outs) {
           const Tensor g = a.gate.contiguous(), u = a.up.contiguous();
           const Tensor d = a.backward ? a.dy.contiguous() : Tensor();
           cuda_kernels::glu(a.device().index, a.activation, a.dtype(), g.raw_data(), u.raw_data(),
                             a.backward ? d.raw_data() : nullptr, a.gate.numel(), outs[0].raw_data(),
                             a.backward ? outs[1].raw_data() : nullptr);
         }});
}

}  // namespace dew::ops
