// grouped_matmul's public functions, validation, output rule, cases and registry.
#include "ops/grouped_matmul/grouped_matmul.h"

namespace dew::ops {

std::vector<int64_t> group_offsets(const GroupedMatmulArgs& a) {
  const Tensor sizes = a.sizes.contiguous();
  const int64_t* s = sizes.data<int64_t>();
  std::vector<int64_t> offsets{0};
  for (int64_t g = 0; g < sizes.numel(); ++g) offsets.push_back(offsets.back() + s[g]);
  return offsets;
}

std::string GroupedMatmul::case_label(const Args& a) {
  return fmt::format("{}{}", dtype_name(a.dtype()), a.transpose_b ? " tb" : "");
}

std::vector<OutputSpec> GroupedMatmul::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, {&a.a, &a.b, &a.sizes});
  DEW_REQUIRE(is_floating(a.dtype()) && a.b.dtype() == a.dtype(),
              "[{}] a is {} and b is {}; expected one floating dtype (f64, f32, bf16, f16) for both", op,
              a.a.describe(), a.b.describe());
  DEW_REQUIRE(a.sizes.dtype() == DType::i64 && a.sizes.dim() == 1,
              "[{}] sizes is {}; expected the rows of each group as i64 (G)", op, a.sizes.describe());
  DEW_REQUIRE(a.a.dim() == 2, "[{}] a is {}; expected (T,K) rows sorted by group", op, a.a.describe());
  const int64_t G = a.sizes.size(0), T = a.a.size(0);
  const Tensor sizes = a.sizes.contiguous();
  int64_t total = 0;
  for (int64_t g = 0; g < G; ++g) {
    const int64_t s = sizes.data<int64_t>()[g];
    DEW_REQUIRE(s >= 0, "[{}] sizes[{}] is {}; expected a count of rows, 0 or more", op, g, s);
    total += s;
  }
  DEW_REQUIRE(total == T, "[{}] sizes sum to {} rows but a has {}; expected every row in one group", op,
              total, T);
  if (a.weight_grad) {
    DEW_REQUIRE(!a.transpose_b, "[{}] takes no transpose_b", op);
    DEW_REQUIRE(a.b.dim() == 2 && a.b.size(0) == T, "[{}] b is {}; expected ({},Q), a row for each of a's",
                op, a.b.describe(), T);
    return {{{G, a.a.size(1), a.b.size(1)}, a.dtype()}};
  }
  const int64_t K = a.a.size(1);
  DEW_REQUIRE(a.b.dim() == 3 && a.b.size(0) == G && a.b.size(a.transpose_b ? 2 : 1) == K,
              "[{}] b is {}; expected {} for {} groups of rows of width {}", op, a.b.describe(),
              a.transpose_b ? fmt::format("({},N,{}) (transpose_b)", G, K) : fmt::format("({},{},N)", G, K),
              G, K);
  return {{{T, a.b.size(a.transpose_b ? 1 : 2)}, a.dtype()}};
}

double GroupedMatmul::flops(const Args& a) {
  const int64_t inner = a.weight_grad ? a.b.size(1) : a.b.size(a.transpose_b ? 1 : 2);
  return 2.0 * double(a.a.numel()) * double(inner);
}

const select::Registry<GroupedMatmulArgs>& GroupedMatmul::registry() {
  static const select::Registry<GroupedMatmulArgs> r = [] {
    select::Registry<GroupedMatmulArgs> reg;
    avx512::add_grouped_matmul_pairs_cpu(reg);  // bf16 on AVX512-BF16: before the widening tiles
    avx2::add_grouped_matmul_pairs_cpu(reg);
    avx512::add_grouped_matmul_cpu(reg);
    avx2::add_grouped_matmul_cpu(reg);
    add_grouped_matmul_portable(reg);
    return reg;
  }();
  return r;
}

namespace {
// 64 experts' loads, uneven as a router leaves them: (e * 37) % 65 rows, 0 to 64, 2,052 in all.
std::vector<double> qwen3_moe_loads() {
  std::vector<double> loads(64);
  for (int e = 0; e < 64; ++e) loads[size_t(e)] = double((e * 37) % 65);
  return loads;
}
}  // namespace

std::vector<Case<GroupedMatmulArgs>> GroupedMatmul::cases(std::string_view op) {
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  // Groups of 5, none, 9 and 2 rows: an empty expert between busy ones.
  const std::vector<double> ragged{5, 0, 9, 2};
  auto rows = [=](int64_t K, int64_t N, bool tb) {
    return [=](DType t, RandomKey k) {
      const int64_t G = int64_t(ragged.size());
      return GroupedMatmulArgs{random_input({16, K}, t, k),
                               random_input(tb ? Shape{G, N, K} : Shape{G, K, N}, t, {k.seed, k.stream + 1}),
                               Tensor::from_values(ragged, {G}, DType::i64), tb, false};
    };
  };
  auto grads = [=](std::vector<double> sizes, int64_t P, int64_t Q) {
    return [=](DType t, RandomKey k) {
      int64_t T = 0;
      for (double s : sizes) T += int64_t(s);
      return GroupedMatmulArgs{random_input({T, P}, t, k), random_input({T, Q}, t, {k.seed, k.stream + 1}),
                               Tensor::from_values(sizes, {int64_t(sizes.size())}, DType::i64), false, true};
    };
  };
  // Groups longer than a vector, and more columns than a tile takes (whole blocks and a tail).
  if (op == "grouped_matmul_weight_grad")
    return {{"ragged", {"ci", "edge"}, all, grads(ragged, 24, 12)},
            {"long_groups", {"ci"}, all, grads({37, 0, 20}, 10, 100)},
            // mixtral_small_up's weight gradient (below): (8, 512, 1408) from the same rows
            {"mixtral_small_up",
             {"bench"},
             {DType::f32, DType::bf16},
             grads({200, 96, 160, 40, 176, 120, 152, 80}, 512, 1408)}};
  // A small Mixtral-shaped layer's up projection: 512 tokens, top-2 of 8 experts, uneven loads.
  auto mixtral = [](DType t, RandomKey k) {
    const std::vector<double> loads{200, 96, 160, 40, 176, 120, 152, 80};
    return GroupedMatmulArgs{random_input({1024, 512}, t, k),
                             random_input({8, 1408, 512}, t, {k.seed, k.stream + 1}),
                             Tensor::from_values(loads, {8}, DType::i64), true, false};
  };
  // A small Qwen3-MoE-shaped layer's up projection (its hidden to expert width, 2048 : 768): about 256
  // tokens top-8 of 64 experts, 32 rows an expert on average, from 0 to 64 (qwen3_moe_loads).
  auto qwen3_moe = [](DType t, RandomKey k) {
    const std::vector<double> loads = qwen3_moe_loads();
    return GroupedMatmulArgs{random_input({2052, 1024}, t, k),
                             random_input({64, 384, 1024}, t, {k.seed, k.stream + 1}),
                             Tensor::from_values(loads, {64}, DType::i64), true, false};
  };
  return {{"ragged", {"ci", "edge"}, all, rows(24, 12, false)},
          {"ragged_linear_weights", {"ci"}, all, rows(24, 12, true)},
          // wider than a tile's two vectors of columns on either tier, with a tail
          {"ragged_wide", {"ci"}, all, rows(24, 72, false)},
          // nn.Linear weights with groups longer than a work item's rows (tiles of 8 and a rest) and
          // columns past two blocks of 48, with a tail
          {"long_linear_weights",
           {"ci"},
           all,
           [](DType t, RandomKey k) {
             const std::vector<double> loads{70, 0, 9, 17};
             return GroupedMatmulArgs{random_input({96, 34}, t, k),
                                      random_input({4, 100, 34}, t, {k.seed, k.stream + 1}),
                                      Tensor::from_values(loads, {4}, DType::i64), true, false};
           }},
          {"mixtral_small_up", {"bench"}, {DType::f32, DType::bf16}, mixtral},
          {"qwen3_moe_small_up", {"bench"}, {DType::f32, DType::bf16}, qwen3_moe}};
}

}  // namespace dew::ops

namespace dew {

Tensor grouped_matmul(const Tensor& a, const Tensor& b, const Tensor& sizes, bool transpose_b) {
  return ops::run_op<ops::GroupedMatmul>(ops::GroupedMatmulArgs{a, b, sizes, transpose_b, false})[0];
}

Tensor grouped_matmul_weight_grad(const Tensor& a, const Tensor& b, const Tensor& sizes) {
  return ops::run_op<ops::GroupedMatmul>(ops::GroupedMatmulArgs{a, b, sizes, false, true})[0];
}

}  // namespace dew
