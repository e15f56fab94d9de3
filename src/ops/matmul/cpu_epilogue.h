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
  // Outputs (m, n0 + j) for j < count from acc[j * stride]: without a bias, an activation or a scale,
  // acc (+ residual) directly — the same values store() gives, at a fraction of its cost a value.
  void store_row(int64_t m, int64_t n0, const Acc* acc, int64_t stride, int64_t count) const {
    T* y = y_ + m * N_ + n0;
    if (bias_p_ || o_.activation != Activation::none || o_.scale != 1) {
      for (int64_t j = 0; j < count; ++j) store(m, n0 + j, acc[j * stride]);
    } else if (residual_p_) {
      const T* r = residual_p_ + m * N_ + n0;
      for (int64_t j = 0; j < count; ++j) y[j] = narrow<T>(acc[j * stride] + widen<Acc>(r[j]));
    } else {
      for (int64_t j = 0; j < count; ++j) y[j] = narrow<T>(acc[j * stride]);
    }
  }

 private:
  const MatmulOptions& o_;
  Tensor bias_, residual_;
  const T *bias_p_, *residual_p_;
  T* y_;
  int64_t N_;
};

}  // namespace dew::ops
