// modulate and gated_add: validation, output rules, registry, cases and the public functions.
#include "ops/modulate/modulate.h"

namespace dew::ops {

std::vector<const Tensor*> ModulateArgs::inputs() const {
  if (fn == ModulateFn::modulate) return {&x, &a, &b};
  return {&x, &y, &a};
}
std::vector<Tensor*> ModulateArgs::mutable_inputs() {
  if (fn == ModulateFn::modulate) return {&x, &a, &b};
  return {&x, &y, &a};
}

std::vector<OutputSpec> Modulate::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()) && a.x.dim() == 3, "[{}] x is {}; expected floating tokens (B,T,C)", op,
              a.x.describe());
  const int64_t B = a.x.size(0), C = a.x.size(2);
  if (a.fn == ModulateFn::gated_add)
    DEW_REQUIRE(a.y.shape() == a.x.shape() && a.y.dtype() == a.dtype(),
                "[gated_add] y is {}; expected x's {}", a.y.describe(), a.x.describe());
  const std::vector<const Tensor*> vectors = a.fn == ModulateFn::modulate
                                                 ? std::vector<const Tensor*>{&a.a, &a.b}
                                                 : std::vector<const Tensor*>{&a.a};
  for (const Tensor* v : vectors)
    DEW_REQUIRE(v->shape() == Shape({B, C}) && v->dtype() == a.dtype(),
                "[{}] a per-sample vector is {}; expected {}[{},{}] (B,C)", op, v->describe(),
                dtype_name(a.dtype()), B, C);
  return {{a.x.shape(), a.dtype()}};
}

const select::Registry<ModulateArgs>& Modulate::registry() {
  static const select::Registry<ModulateArgs> r = [] {
    select::Registry<ModulateArgs> reg;
    avx512::add_modulate_cpu(reg);
    avx2::add_modulate_cpu(reg);
    add_modulate_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<ModulateArgs>> Modulate::cases(std::string_view op) {
  const ModulateFn fn = op == "modulate" ? ModulateFn::modulate : ModulateFn::gated_add;
  auto make = [=](int64_t B, int64_t T, int64_t C) {
    return [=](DType t, RandomKey k) {
      ModulateArgs a;
      a.fn = fn;
      a.x = random_input({B, T, C}, t, k);
      a.a = random_input({B, C}, t, {k.seed, k.stream + 1}, 0.5);
      if (fn == ModulateFn::modulate)
        a.b = random_input({B, C}, t, {k.seed, k.stream + 2}, 0.5);
      else
        a.y = random_input({B, T, C}, t, {k.seed, k.stream + 2});
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"dit_block", {"ci"}, all, make(3, 16, 64)},
          {"odd_channels", {"ci", "edge"}, all, make(2, 5, 37)},
          {"fashion_dit", {"bench"}, {DType::f32, DType::bf16}, make(256, 196, 256)}};
}

}  // namespace dew::ops

namespace dew {

Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale) {
  ops::ModulateArgs a;
  a.x = x, a.a = shift, a.b = scale;
  return ops::run_op<ops::Modulate>(a)[0];
}

Tensor gated_add(const Tensor& residual, const Tensor& y, const Tensor& gate) {
  ops::ModulateArgs a;
  a.fn = ops::ModulateFn::gated_add, a.x = residual, a.y = y, a.a = gate;
  return ops::run_op<ops::Modulate>(a)[0];
}

}  // namespace dew
