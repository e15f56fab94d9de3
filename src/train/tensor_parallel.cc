// GroupTensorParallel (tensor_parallel.h): Megatron's f and g over a communicator.
#include "train/tensor_parallel.h"

#include <dew/autodiff.h>
#include <dew/ops.h>

namespace dew::train {

Tensor GroupTensorParallel::sum(const Tensor& x) {
  // A bf16 partial is summed in f32 and rounded once, as the all-reduce of a bf16 run's activations.
  const bool wide = x.dtype() == DType::f32 || x.dtype() == DType::f64;
  Tensor total = wide ? x.clone() : cast(x, DType::f32).contiguous();
  group_.all_reduce_sum(total);
  return wide ? total : cast(total, x.dtype());
}

Tensor GroupTensorParallel::reduce(const Tensor& x) {
  return custom_function(x, {.name = "tensor_parallel_reduce",
                             .forward = [this](const Tensor& v) { return sum(v); },
                             .vjp = [](const Tensor& d) { return d; },
                             .jvp = [this](const Tensor& t) { return sum(t); }});
}

Tensor GroupTensorParallel::copy(const Tensor& x) {
  return custom_function(x, {.name = "tensor_parallel_copy",
                             .forward = [](const Tensor& v) { return v; },
                             .vjp = [this](const Tensor& d) { return sum(d); },
                             .jvp = [](const Tensor& t) { return t; }});
}

}  // namespace dew::train
