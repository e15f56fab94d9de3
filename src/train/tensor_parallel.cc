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
  const int64_t P = group_.size();
  sent_bytes_ += 2 * (P - 1) * total.numel() * int64_t(dtype_size(total.dtype())) / P;
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

Tensor gather_whole(parallel::Communicator& group, const std::string& name, const Tensor& part) {
  const int dim = tensor_parallel_dim(name);
  if (dim < 0 || group.size() == 1) return part;
  DEW_REQUIRE(part.dim() == 2 || (part.dim() == 1 && dim == 0),
              "[train] {} is {}; tensor parallelism splits matrices and their biases", name, part.describe());
  const Tensor mine = part.contiguous().reshape({part.numel()});
  Tensor all = Tensor::empty({int64_t(group.size()) * part.numel()}, part.dtype());
  group.all_gather(mine, all);
  if (dim == 0) {  // the parts' rows, one after another
    Shape whole = part.shape();
    whole[0] *= group.size();
    return all.reshape(whole);
  }
  // Columns: (P, R, c) -> (R, P, c) -> (R, P c).
  const int64_t R = part.size(0), c = part.size(1);
  return all.reshape({int64_t(group.size()), R, c})
      .permute({1, 0, 2})
      .contiguous()
      .reshape({R, group.size() * c});
}

}  // namespace dew::train
