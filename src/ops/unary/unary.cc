// Unary ops: names, output rule, the registry, cases and the public functions.
#include "ops/unary/unary.h"

#include "ops/unary/scalar.h"

namespace dew::ops {
namespace {

constexpr std::array<std::string_view, 13> kNames{"neg",   "abs",       "exp",  "log",     "sqrt",
                                                  "rsqrt", "square",    "tanh", "sigmoid", "silu",
                                                  "gelu",  "gelu_tanh", "relu"};

// Which inputs a function is defined on: log, sqrt and rsqrt take positive draws.
bool positive_domain(UnaryFn f) {
  return f == UnaryFn::log || f == UnaryFn::sqrt || f == UnaryFn::rsqrt;
}

}  // namespace

std::string_view unary_name(UnaryFn f) {
  return kNames[size_t(f)];
}

UnaryFn unary_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return UnaryFn(i);
  fail("'{}' is not a unary op; expected one of {}", name, fmt::join(kNames, ", "));
}

std::vector<OutputSpec> Unary::infer(const Args& a) {
  require_same_device(unary_name(a.fn).data(), a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()), "[{}] x is {}; expected a floating dtype (f64, f32, bf16, f16)",
              unary_name(a.fn), a.x.describe());
  return {{a.x.shape(), a.dtype()}};
}

const select::Registry<UnaryArgs>& Unary::registry() {
  static const select::Registry<UnaryArgs> r = [] {
    select::Registry<UnaryArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_unary_cuda, reg);
    avx512::add_unary_table_cpu(reg);
    avx2::add_unary_table_cpu(reg);
    avx512::add_unary_cpu(reg);  // ahead of cpu.table: NOTE [cheap functions on AVX-512 vectors]
    add_unary_table(reg);
    avx2::add_unary_cpu(reg);
    add_unary_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<UnaryArgs>> Unary::cases(std::string_view op) {
  UnaryFn fn = unary_from_name(op);
  auto make = [fn](Shape shape, bool strided) {
    return [=](DType t, RandomKey k) {
      Tensor x = random_input(shape, t, k, 2.0);
      if (positive_domain(fn)) x = abs(x);
      if (strided) x = x.transpose(0, 1);
      return UnaryArgs{x, fn};
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"rows_1000", {"ci"}, all, make({8, 1000}, false)},
          {"odd_tail", {"ci", "edge"}, all, make({3, 37}, false)},
          {"transposed", {"ci", "edge"}, all, make({19, 6}, true)},
          {"gpt2_mlp", {"bench"}, {DType::f32, DType::bf16, DType::f16}, make({4096, 3072}, false)}};
}

}  // namespace dew::ops

namespace dew {
namespace {
Tensor unary(ops::UnaryFn fn, const Tensor& x) {
  return ops::run_op<ops::Unary>(ops::UnaryArgs{x, fn})[0];
}
}  // namespace

Tensor neg(const Tensor& x) {
  return unary(ops::UnaryFn::neg, x);
}
Tensor abs(const Tensor& x) {
  return unary(ops::UnaryFn::abs, x);
}
Tensor exp(const Tensor& x) {
  return unary(ops::UnaryFn::exp, x);
}
Tensor log(const Tensor& x) {
  return unary(ops::UnaryFn::log, x);
}
Tensor sqrt(const Tensor& x) {
  return unary(ops::UnaryFn::sqrt, x);
}
Tensor rsqrt(const Tensor& x) {
  return unary(ops::UnaryFn::rsqrt, x);
}
Tensor square(const Tensor& x) {
  return unary(ops::UnaryFn::square, x);
}
Tensor tanh(const Tensor& x) {
  return unary(ops::UnaryFn::tanh, x);
}
Tensor sigmoid(const Tensor& x) {
  return unary(ops::UnaryFn::sigmoid, x);
}
Tensor silu(const Tensor& x) {
  return unary(ops::UnaryFn::silu, x);
}
Tensor gelu(const Tensor& x, bool tanh_approximation) {
  return unary(tanh_approximation ? ops::UnaryFn::gelu_tanh : ops::UnaryFn::gelu, x);
}
Tensor relu(const Tensor& x) {
  return unary(ops::UnaryFn::relu, x);
}

}  // namespace dew
