// layer_norm and layer_norm_backward on CUDA: registration (kernels in cuda.cu).
#include "ops/layer_norm/cuda.h"

#include "ops/cuda_view.h"
#include "ops/layer_norm/layer_norm.h"

namespace dew::ops {
namespace {

const void* data_or_null(const Tensor& t) {
  return t.defined() ? t.raw_data() : nullptr;
}

Tensor contiguous_or_undefined(const Tensor& t) {
  return t.defined() ? t.contiguous() : Tensor();
}

}  // namespace

void add_layer_norm_cuda(select::Registry<LayerNormArgs>& r) {
  r.add({"cuda.block_per_row", cuda_requirements<LayerNormArgs>(kCudaFloating),
         [](const LayerNormArgs& a, std::vector<Tensor>& outs) {
           const Tensor x = a.x.contiguous(), w = contiguous_or_undefined(a.weight);
           const int64_t C = a.x.size(-1), rows = C > 0 ? a.x.numel() / C : 0;
           const int device = a.device().index;
           if (!a.backward) {
             const Tensor b = contiguous_or_undefined(a.bias);
             return cuda_kernels::layer_norm_forward(device, a.dtype(), x.raw_data(), data_or_null(w),
                                                     data_or_null(b), a.eps, rows, C, outs[0].raw_data(),
                                                     outs[1].raw_data(), outs[2].raw_data());
           }
           const Tensor dy = a.dy.contiguous(), mean = a.mean.contiguous(), rstd = a.rstd.contiguous();
           cuda_kernels::layer_norm_backward(device, a.dtype(), dy.raw_data(), x.raw_data(), data_or_null(w),
                                             mean.raw_data(), rstd.raw_data(), rows, C, kLayerNormBlockRows,
                                             outs[0].raw_data(), w.defined() ? outs[1].raw_data() : nullptr,
                                             w.defined() ? outs[2].raw_data() : nullptr);
         }});
}

}  // namespace dew::ops
