// softmax, log_softmax and cumsum on CUDA: registration (kernels in cuda.cu). The axis moves last
// (rows.h); a result along another axis is put back in order by one strided copy.
#include "ops/along_axis/cuda.h"

#include "ops/along_axis/along_axis.h"
#include "ops/cuda_view.h"
#include "ops/rows.h"

namespace dew::ops {

void add_along_axis_cuda(select::Registry<AlongAxisArgs>& r) {
  r.add({"cuda.block_per_row", cuda_requirements<AlongAxisArgs>(kCudaFloating),
         [](const AlongAxisArgs& a, std::vector<Tensor>& outs) {
           const int64_t axis = normalize_axis(a.axis, a.x.dim(), AlongAxis::name(a).data());
           const RowLayout l = rows_along(a.x, {axis});
           const bool in_place = axis == a.x.dim() - 1;
           Tensor y = in_place ? outs[0] : Tensor::empty(l.rows.shape(), a.dtype(), a.device());
           cuda_kernels::along_rows(a.device().index, a.fn, a.dtype(), l.rows.raw_data(),
                                    numel_of(l.kept_shape), l.length, y.raw_data());
           if (!in_place) restore_order(y, l.order, outs[0]);
         }});
}

}  // namespace dew::ops
