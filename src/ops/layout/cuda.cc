// The layout ops on CUDA (cuda.strided_copy): the same views and strided copies as on the cpu
// (layout_copies; core's copy_strided runs on the device), and tril/triu's zeroing kernel.
#include "ops/layout/cuda.h"

#include "core/strided.h"
#include "ops/cuda_view.h"
#include "ops/layout/layout.h"

namespace dew::ops {

void add_layout_cuda(select::Registry<LayoutArgs>& r) {
  r.add({"cuda.strided_copy",
         cuda_requirements<LayoutArgs>({DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64,
                                        DType::i32, DType::u8, DType::boolean}),
         [](const LayoutArgs& a, std::vector<Tensor>& outs) {
           if (a.fn != LayoutFn::tril && a.fn != LayoutFn::triu) return layout_copies(a, outs);
           Tensor& y = outs[0];
           detail::copy_strided(a.xs[0], y);
           const int64_t R = y.size(-2), C = y.size(-1);
           cuda_kernels::zero_triangle(a.device().index, dtype_size(y.dtype()), y.raw_data(),
                                       y.numel() / std::max<int64_t>(R * C, 1), R, C, a.axis,
                                       a.fn == LayoutFn::tril);
         }});
}

}  // namespace dew::ops
