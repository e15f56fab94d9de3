// Binary ops on CUDA: registration (kernels in cuda.cu). Broadcasting is by expand(): stride-0 views.
#include "ops/binary/cuda.h"

#include "ops/binary/binary.h"
#include "ops/cuda_view.h"

namespace dew::ops {

void add_binary_cuda(select::Registry<BinaryArgs>& r) {
  r.add({"cuda.elementwise", cuda_requirements<BinaryArgs>(kCudaFloating),
         [](const BinaryArgs& a, std::vector<Tensor>& outs) {
           const Shape& shape = outs[0].shape();
           cuda_kernels::binary(a.device().index, a.fn, a.dtype(), cuda_view(a.a.expand(shape)),
                                cuda_view(a.b.expand(shape)), outs[0].raw_data());
         }});
}

}  // namespace dew::ops
