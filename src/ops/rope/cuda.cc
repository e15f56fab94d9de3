// rope on CUDA: registration (kernels in cuda.cu).
#include "ops/rope/cuda.h"

#include "ops/cuda_view.h"
#include "ops/rope/rope.h"

namespace dew::ops {

void add_rope_cuda(select::Registry<RopeArgs>& r) {
  r.add({"cuda.elementwise", cuda_requirements<RopeArgs>(kCudaFloating),
         [](const RopeArgs& a, std::vector<Tensor>& outs) {
           const Tensor x = a.x.contiguous(), p = a.positions.contiguous(), c = a.cos.contiguous(),
                        s = a.sin.contiguous();
           cuda_kernels::rope(a.device().index, a.dtype(), x.raw_data(), p.data<int64_t>(), c.raw_data(),
                              s.raw_data(), a.x.size(0) * a.x.size(1), a.x.size(2), a.x.size(3),
                              a.cos.size(1), a.layout == RopeLayout::interleaved, outs[0].raw_data());
         }});
}

}  // namespace dew::ops
