// cast: the output rule, the registry, the cases and the public function.
#include "ops/cast/cast.h"

namespace dew::ops {

std::string Cast::case_label(const Args& a) {
  return fmt::format("{}->{}", dtype_name(a.x.dtype()), dtype_name(a.to));
}

std::vector<OutputSpec> Cast::infer(const Args& a) {
  return {{a.x.shape(), a.to}};
}

const select::Registry<CastArgs>& Cast::registry() {
  static const select::Registry<CastArgs> r = [] {
    select::Registry<CastArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_cast_cuda, reg);
    add_cast_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<CastArgs>> Cast::cases(std::string_view) {
  auto to = [](DType target, double scale) {
    return [=](DType t, RandomKey k) { return CastArgs{random_input({37, 29}, t, k, scale), target}; };
  };
  auto strided = [](DType t, RandomKey k) {
    return CastArgs{random_input({16, 24}, t, k).transpose(0, 1).slice(0, 1, 23, 2), DType::bf16};
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {
      {"to_bf16", {"ci"}, all, to(DType::bf16, 1.0)},
      {"to_f16", {"ci"}, all, to(DType::f16, 1.0)},
      {"to_f16_overflow_underflow", {"ci", "edge"}, {DType::f64, DType::f32}, to(DType::f16, 3e4)},
      {"to_f32", {"ci"}, all, to(DType::f32, 1.0)},
      {"to_f64", {"ci"}, all, to(DType::f64, 1.0)},
      {"to_i32", {"ci"}, all, to(DType::i32, 100.0)},
      {"to_i64", {"ci"}, all, to(DType::i64, 100.0)},
      {"strided_to_bf16", {"ci", "edge"}, all, strided},
  };
}

void cast_into(const Tensor& x, Tensor& out) {
  std::vector<Tensor> outs{out};
  run_op_into<Cast>(CastArgs{x, out.dtype()}, outs);
}

}  // namespace dew::ops

namespace dew {
Tensor cast(const Tensor& x, DType dtype) {
  return ops::run_op<ops::Cast>(ops::CastArgs{x, dtype})[0];
}

Tensor as_dtype(const Tensor& x, DType dtype) {
  return x.dtype() == dtype ? x : cast(x, dtype);
}
}  // namespace dew
