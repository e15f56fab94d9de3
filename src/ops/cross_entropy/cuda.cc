// cross_entropy on CUDA: registration (kernels in cuda.cu).
#include "ops/cross_entropy/cuda.h"

#include "ops/cross_entropy/cross_entropy.h"
#include "ops/cuda_view.h"

namespace dew::ops {

void add_cross_entropy_cuda(select::Registry<CrossEntropyArgs>& r) {
  r.add({"cuda.block_per_row", cuda_requirements<CrossEntropyArgs>(kCudaFloating),
         [](const CrossEntropyArgs& a, std::vector<Tensor>& outs) {
           const Tensor x = a.logits.contiguous(), t = a.targets.contiguous();
           const Tensor w = a.weights.defined() ? a.weights.contiguous() : Tensor();
           const int64_t V = a.logits.size(-1);
           cuda_kernels::cross_entropy(a.device().index, a.dtype(), x.raw_data(), t.data<int64_t>(),
                                       w.defined() ? w.raw_data() : nullptr, a.ignore_index, a.z_loss,
                                       a.logits.numel() / V, V, outs[0].raw_data(), outs[1].raw_data(),
                                       outs[2].raw_data());
         }});
}

}  // namespace dew::ops
