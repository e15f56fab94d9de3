// What every CUDA implementation's registration (an op's cuda.cc) shares: tensors as kernels see
// them (cuda/view.h), and the requirements common to all of them (a CUDA device of sm >= 80, the
// dtypes the kernels are instantiated for, rank within cuda::kMaxRank).
#pragma once

#include "cuda/view.h"
#include "ops/op.h"

namespace dew::ops {

inline cuda::View cuda_view(const Tensor& t) {
  DEW_REQUIRE(t.dim() <= cuda::kMaxRank, "[cuda] {} has rank {}; CUDA kernels take rank <= {}", t.describe(),
              t.dim(), cuda::kMaxRank);
  cuda::View v;
  v.data = t.raw_data();
  v.rank = int(t.dim());
  v.contiguous = t.is_contiguous();
  v.numel = t.numel();
  for (int d = 0; d < v.rank; ++d) v.shape[d] = t.shape()[size_t(d)], v.strides[d] = t.strides()[size_t(d)];
  return v;
}

template <class Args>
std::vector<select::Requirement<Args>> cuda_requirements(std::vector<DType> dtypes) {
  return {select::on_cuda<Args>(), select::dtype_in<Args>(std::move(dtypes)),
          select::requires_that<Args>(
              fmt::format("rank <= {}", cuda::kMaxRank),
              [](const Args& a) {
                for (const Tensor* t : a.inputs())
                  if (t->defined() && t->dim() > cuda::kMaxRank) return false;
                return true;
              },
              [](const Args&) { return std::string("an input has a higher rank"); })};
}

inline const std::vector<DType> kCudaFloating{DType::f64, DType::f32, DType::bf16, DType::f16};

}  // namespace dew::ops
