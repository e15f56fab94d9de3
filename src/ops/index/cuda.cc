// The indexing ops on CUDA: registration (kernels in cuda.cu). Indices were checked by infer().
#include "ops/index/cuda.h"

#include "ops/cuda_view.h"
#include "ops/index/index.h"

namespace dew::ops {
namespace {

// (outer, length, inner) around an axis of a shape.
void around_axis(const Shape& s, int64_t axis, int64_t* outer, int64_t* length, int64_t* inner) {
  *outer = *length = *inner = 1;
  for (int64_t d = 0; d < int64_t(s.size()); ++d)
    (d < axis ? *outer : d == axis ? *length : *inner) *= s[size_t(d)];
}

void run_index_cuda(const IndexArgs& a, Tensor& out) {
  const int device = a.device().index;
  const Tensor idx = a.index.contiguous();
  const int64_t* ids = idx.data<int64_t>();
  switch (a.fn) {
    case IndexFn::embedding:
    case IndexFn::index_select: {
      const Tensor x = a.x.contiguous();
      const int64_t axis = a.fn == IndexFn::embedding ? 0 : normalize_axis(a.axis, a.x.dim(), "index_select");
      int64_t outer, length, inner;
      around_axis(x.shape(), axis, &outer, &length, &inner);
      return cuda_kernels::select_rows(device, dtype_size(x.dtype()), x.raw_data(), outer, length, inner, ids,
                                       idx.numel(), out.raw_data());
    }
    case IndexFn::gather:
    case IndexFn::scatter_add: {
      const Tensor x = a.x.contiguous();
      const int axis = int(normalize_axis(a.axis, a.x.dim(), "index"));
      if (a.fn == IndexFn::gather)
        return cuda_kernels::gather(device, dtype_size(x.dtype()), x.raw_data(), cuda_view(x), ids,
                                    cuda_view(idx), axis, out.raw_data());
      const Tensor src = a.src.contiguous();
      return cuda_kernels::scatter_add(device, x.dtype(), x.raw_data(), cuda_view(x), ids, src.raw_data(),
                                       cuda_view(idx), axis, out.raw_data());
    }
    case IndexFn::embedding_backward: {
      const Tensor d = a.x.contiguous();
      return cuda_kernels::embedding_backward(device, d.dtype(), d.raw_data(), ids, idx.numel(), d.size(-1),
                                              a.count, out.raw_data());
    }
    case IndexFn::one_hot:
      return cuda_kernels::one_hot(device, ids, idx.numel(), a.count, out.data<int64_t>());
  }
}

}  // namespace

void add_index_cuda(select::Registry<IndexArgs>& r) {
  r.add({"cuda.indexed",
         cuda_requirements<IndexArgs>({DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64,
                                       DType::i32, DType::u8, DType::boolean}),
         [](const IndexArgs& a, std::vector<Tensor>& outs) { run_index_cuda(a, outs[0]); }});
}

}  // namespace dew::ops
