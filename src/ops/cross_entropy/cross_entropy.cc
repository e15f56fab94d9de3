// cross_entropy: validation, output rule, registry, cases and the public function.
#include "ops/cross_entropy/cross_entropy.h"

#include <cmath>

namespace dew::ops {
namespace {

DType result_dtype(DType logits) {
  return logits == DType::f64 ? DType::f64 : DType::f32;
}

}  // namespace

std::vector<const Tensor*> CrossEntropyArgs::inputs() const {
  if (weights.defined()) return {&logits, &targets, &weights};
  return {&logits, &targets};
}
std::vector<Tensor*> CrossEntropyArgs::mutable_inputs() {
  if (weights.defined()) return {&logits, &targets, &weights};
  return {&logits, &targets};
}

std::vector<OutputSpec> CrossEntropy::infer(const Args& a) {
  require_same_device("cross_entropy", a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()) && a.logits.dim() >= 1 && a.logits.size(-1) > 0,
              "[cross_entropy] logits is {}; expected a floating tensor (..., V) with V > 0",
              a.logits.describe());
  Shape rows(a.logits.shape().begin(), a.logits.shape().end() - 1);
  DEW_REQUIRE(a.targets.dtype() == DType::i64 && a.targets.shape() == rows,
              "[cross_entropy] targets is {}; expected i64{} (logits' shape without V)", a.targets.describe(),
              shape_str(rows));
  if (a.weights.defined())
    DEW_REQUIRE(a.weights.shape() == rows && a.weights.dtype() == result_dtype(a.dtype()),
                "[cross_entropy] weights is {}; expected {}{}", a.weights.describe(),
                dtype_name(result_dtype(a.dtype())), shape_str(rows));
  DEW_REQUIRE(a.z_loss >= 0 && std::isfinite(a.z_loss),
              "[cross_entropy] z_loss is {}; expected a finite value >= 0", a.z_loss);
  const int64_t V = a.logits.size(-1);
  std::vector<double> t = a.targets.to_f64_vector();
  for (size_t i = 0; i < t.size(); ++i)
    DEW_REQUIRE(int64_t(t[i]) == a.ignore_index || (t[i] >= 0 && int64_t(t[i]) < V),
                "[cross_entropy] targets[{}] is {}; expected a class in [0, {}) or ignore_index {}", i,
                int64_t(t[i]), V, a.ignore_index);
  DType r = result_dtype(a.dtype());
  return {{{}, r}, {a.logits.shape(), a.dtype()}, {rows, r}};
}

const select::Registry<CrossEntropyArgs>& CrossEntropy::registry() {
  static const select::Registry<CrossEntropyArgs> r = [] {
    select::Registry<CrossEntropyArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_cross_entropy_cuda, reg);
    avx512::add_cross_entropy_cpu(reg);
    avx2::add_cross_entropy_cpu(reg);
    add_cross_entropy_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<CrossEntropyArgs>> CrossEntropy::cases(std::string_view) {
  auto make = [](int64_t N, int64_t V, double scale, bool weights, double z, bool ignore) {
    return [=](DType t, RandomKey k) {
      CrossEntropyArgs a;
      a.logits = random_input({N, V}, t, k, scale);
      a.targets = Tensor::empty({N}, DType::i64);
      fill_randint(a.targets, {k.seed, k.stream + 1, 0}, 0, V);
      if (ignore)
        for (int64_t i = 0; i < N; i += 3) a.targets.data<int64_t>()[i] = a.ignore_index;
      if (weights) {
        a.weights = Tensor::empty({N}, result_dtype(t));
        fill_uniform(a.weights, {k.seed, k.stream + 2, 0}, 0.5, 2.0);
      }
      a.z_loss = z;
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {
      {"vocab_1000", {"ci"}, all, make(16, 1000, 2.0, false, 0, false)},
      {"ignored_weighted_zloss", {"ci", "edge"}, all, make(12, 333, 3.0, true, 1e-4, true)},
      {"large_logits", {"ci", "edge"}, all, make(8, 517, 30.0, false, 0, false)},
      // several of the kernels' 1024-logit blocks, whose running max moves (NOTE [one pass over the logits])
      {"blocks_large_logits", {"ci", "edge"}, all, make(4, 4500, 30.0, true, 1e-4, false)},
      {"gpt2_vocab",
       {"bench"},
       {DType::f32, DType::bf16, DType::f16},
       make(1024, 50257, 2.0, false, 0, false)}};
}

}  // namespace dew::ops

namespace dew {
CrossEntropyResult cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& o) {
  auto outs = ops::run_op<ops::CrossEntropy>(
      ops::CrossEntropyArgs{logits, targets, o.weights, o.ignore_index, o.z_loss});
  return {outs[0], outs[1], outs[2]};
}
}  // namespace dew
