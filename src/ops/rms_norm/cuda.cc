// rms_norm and rms_norm_backward on CUDA: registration (kernels in cuda.cu).
#include "ops/rms_norm/cuda.h"

#include "ops/cuda_view.h"
#include "ops/rms_norm/rms_norm.h"

namespace dew::ops {
namespace {

const void* data_or_null(const Tensor& t) {
  return t.defined() ? t.raw_data() : nullptr;
}

}  // namespace

void add_rms_norm_cuda(select::Registry<RmsNormArgs>& r) {
  r.add({"cuda.block_per_row", cuda_requirements<RmsNormArgs>(kCudaFloating),
         [](const RmsNormArgs& a, std::vector<Tensor>& outs) {
           const Tensor x = a.x.contiguous(), w = a.weight.defined() ? a.weight.contiguous() : Tensor();
           const int64_t C = a.x.size(-1);
           cuda_kernels::rms_norm_forward(a.device().index, a.dtype(), x.raw_data(), data_or_null(w), a.eps,
                                          C > 0 ? a.x.numel() / C : 0, C, outs[0].raw_data(),
                                          outs[1].raw_data());
         }});
}

void add_rms_norm_backward_cuda(select::Registry<RmsNormBackwardArgs>& r) {
  r.add({"cuda.block_per_row", cuda_requirements<RmsNormBackwardArgs>(kCudaFloating),
         [](const RmsNormBackwardArgs& a, std::vector<Tensor>& outs) {
           const Tensor dy = a.dy.contiguous(), x = a.x.contiguous(), rstd = a.rstd.contiguous();
           const Tensor w = a.weight.defined() ? a.weight.contiguous() : Tensor();
           const int64_t C = a.x.size(-1);
           cuda_kernels::rms_norm_backward(a.device().index, a.dtype(), dy.raw_data(), x.raw_data(),
                                           data_or_null(w), rstd.raw_data(), C > 0 ? a.x.numel() / C : 0, C,
                                           kWeightGradBlockRows, outs[0].raw_data(),
                                           w.defined() ? outs[1].raw_data() : nullptr);
         }});
}

}  // namespace dew::ops
