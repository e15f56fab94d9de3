// The epilogue of the CPU's own products (the GEMVs and the tiles): bias and residual made contiguous
// once, then y[m, n] = act(scale * acc + bias[n]) + residual[m, n], rounded once to T.
#pragma once

#include "ops/kernel_types.h"
#include "ops/matmul/epilogue.h"
#include "ops/matmul/matmul.h"

namespace dew::ops {

template <class T>
class CpuEpilogue {
 public:
  using Acc = AccumulatorOf<T>;
  CpuEpilogue(const MatmulArgs& args, Tensor& out, int64_t N)
      : o_(args.options),
        bias_(o_.bias.defined() ? o_.bias.contiguous() : Tensor()),
        residual_(o_.residual.defined() ? o_.residual.contiguous() : Tensor()),
        bias_p_(bias_.defined() ? bias_.data<T>() : nullptr),
        residual_p_(residual_.defined() ? residual_.data<T>() : nullptr),
        y_(out.data<T>()),
        N_(N) {}
  void store(int64_t m, int64_t n, Acc acc) const {
    const int64_t i = m * N_ + n;
    y_[i] = narrow<T>(matmul_epilogue<Acc>(o_, acc, bias_p_ ? widen<Acc>(bias_p_[n]) : Acc(0),
                                           residual_p_ ? widen<Acc>(residual_p_[i]) : Acc(0)));
  }

 private:
  const MatmulOptions& o_;
  Tensor bias_, residual_;
  const T *bias_p_, *residual_p_;
  T* y_;
  int64_t N_;
};

}  // namespace dew::ops
