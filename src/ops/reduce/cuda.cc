// Reductions on CUDA: registration (kernels in cuda.cu). The reduced axes move last (rows.h), so the
// kernels see contiguous rows.
#include "ops/reduce/cuda.h"

#include "ops/cuda_view.h"
#include "ops/reduce/reduce.h"
#include "ops/rows.h"

namespace dew::ops {

void add_reduce_cuda(select::Registry<ReduceArgs>& r) {
  r.add({"cuda.block_per_row", cuda_requirements<ReduceArgs>(kCudaFloating),
         [](const ReduceArgs& a, std::vector<Tensor>& outs) {
           const RowLayout l = rows_along(a.x, normalize_axes(a.axes, a.x.dim(), reduce_name(a.fn).data()));
           cuda_kernels::reduce_rows(a.device().index, a.fn, a.dtype(), l.rows.raw_data(),
                                     numel_of(l.kept_shape), l.length, outs[0].raw_data());
         }});
}

}  // namespace dew::ops
