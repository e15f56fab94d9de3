// short_conv: validation, output rule, registry, cases and the public function.
#include "ops/short_conv/short_conv.h"

namespace dew::ops {

std::vector<const Tensor*> ShortConvArgs::inputs() const {
  std::vector<const Tensor*> v;
  for (const Tensor* t : {&x, &weight, &bias, &initial, &segments})
    if (t->defined()) v.push_back(t);
  return v;
}
std::vector<Tensor*> ShortConvArgs::mutable_inputs() {
  std::vector<Tensor*> v;
  for (Tensor* t : {&x, &weight, &bias, &initial, &segments})
    if (t->defined()) v.push_back(t);
  return v;
}

std::vector<OutputSpec> ShortConv::infer(const Args& a) {
  require_same_device("short_conv", a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()) && a.x.dim() == 3, "[short_conv] x is {}; expected floating (B,T,C)",
              a.x.describe());
  const int64_t B = a.x.size(0), C = a.x.size(2);
  DEW_REQUIRE(
      a.weight.dim() == 2 && a.weight.size(0) == C && a.weight.size(1) >= 1 && a.weight.dtype() == a.dtype(),
      "[short_conv] weight is {}; expected {}[{},W] (C,W), one kernel of W taps per channel",
      a.weight.describe(), dtype_name(a.dtype()), C);
  const int64_t W = a.weight.size(1);
  DEW_REQUIRE(!a.bias.defined() || (a.bias.shape() == Shape({C}) && a.bias.dtype() == a.dtype()),
              "[short_conv] bias is {}; expected {}[{}] (C)", a.bias.describe(), dtype_name(a.dtype()), C);
  DEW_REQUIRE(
      !a.initial.defined() || (a.initial.shape() == Shape({B, W - 1, C}) && a.initial.dtype() == a.dtype()),
      "[short_conv] initial is {}; expected {}[{},{},{}] (B,W-1,C): the W - 1 inputs before the first",
      a.initial.describe(), dtype_name(a.dtype()), B, W - 1, C);
  DEW_REQUIRE(!a.segments.defined() ||
                  (a.segments.dtype() == DType::i64 && a.segments.shape() == Shape({B, a.x.size(1)})),
              "[short_conv] segments is {}; expected i64[{},{}] (B,T) document ids", a.segments.describe(), B,
              a.x.size(1));
  DEW_REQUIRE(a.activation == Activation::none || a.activation == Activation::silu,
              "[short_conv] activation {}; expected none or silu", int(a.activation));
  return {{a.x.shape(), a.dtype()}};
}

const select::Registry<ShortConvArgs>& ShortConv::registry() {
  static const select::Registry<ShortConvArgs> r = [] {
    select::Registry<ShortConvArgs> reg;
    add_short_conv_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<ShortConvArgs>> ShortConv::cases(std::string_view) {
  auto make = [](int64_t B, int64_t T, int64_t C, int64_t W, bool bias, bool initial, bool packed = false,
                 bool silu = false) {
    return [=](DType t, RandomKey k) {
      ShortConvArgs a;
      a.x = random_input({B, T, C}, t, k);
      a.weight = random_input({C, W}, t, {k.seed, k.stream + 1}, 0.5);
      if (bias) a.bias = random_input({C}, t, {k.seed, k.stream + 2}, 0.5);
      if (initial) a.initial = random_input({B, W - 1, C}, t, {k.seed, k.stream + 3});
      if (silu) a.activation = Activation::silu;
      if (packed) {  // documents of 5 tokens
        std::vector<double> ids;
        for (int64_t i = 0; i < B * T; ++i) ids.push_back(double((i % T) / 5));
        a.segments = Tensor::from_values(ids, {B, T}, DType::i64);
      }
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"mamba2_width4", {"ci"}, all, make(2, 33, 48, 4, true, false)},
          {"decode_step_cached", {"ci", "edge"}, all, make(3, 1, 40, 4, false, true)},
          {"chunk_after_cache", {"ci"}, all, make(2, 9, 24, 4, true, true)},
          {"shorter_than_kernel", {"ci", "edge"}, all, make(1, 2, 7, 4, true, false)},
          {"packed_documents", {"ci", "edge"}, all, make(2, 17, 12, 4, true, true, true)},
          {"mamba2_silu", {"ci"}, all, make(2, 21, 40, 4, true, false, false, true)},
          {"decode_step_silu", {"ci", "edge"}, all, make(3, 1, 24, 4, true, true, false, true)},
          {"prefill_2k", {"bench"}, {DType::f32, DType::bf16}, make(1, 2048, 1024, 4, true, false)}};
}

}  // namespace dew::ops

namespace dew {

Tensor short_conv(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& initial,
                  const Tensor& segments, Activation activation) {
  ops::ShortConvArgs a;
  a.x = x, a.weight = weight, a.bias = bias, a.initial = initial, a.segments = segments;
  a.activation = activation;
  return ops::run_op<ops::ShortConv>(a)[0];
}

}  // namespace dew
