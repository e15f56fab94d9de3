// rope: validation, output rule, registry, cases, the tables and the public function.
#include "ops/rope/rope.h"

#include <cmath>

namespace dew::ops {
namespace {

DType table_dtype(DType x) {
  return x == DType::f64 ? DType::f64 : DType::f32;
}

}  // namespace

std::string Rope::case_label(const Args& a) {
  return fmt::format("{} {}", dtype_name(a.dtype()),
                     a.layout == RopeLayout::interleaved ? "interleaved" : "rotate_half");
}

std::vector<OutputSpec> Rope::infer(const Args& a) {
  require_same_device("rope", a.inputs());
  DEW_REQUIRE(is_floating(a.dtype()) && a.x.dim() == 4,
              "[rope] x is {}; expected a floating (B,T,H,D) tensor", a.x.describe());
  DEW_REQUIRE(a.positions.dtype() == DType::i64 && a.positions.shape() == Shape({a.x.size(0), a.x.size(1)}),
              "[rope] positions is {}; expected i64[{},{}]", a.positions.describe(), a.x.size(0),
              a.x.size(1));
  DEW_REQUIRE(a.cos.dim() == 2 && a.sin.shape() == a.cos.shape() && a.cos.dtype() == table_dtype(a.dtype()) &&
                  a.sin.dtype() == a.cos.dtype(),
              "[rope] cos is {} and sin is {}; expected two {}(P, R/2) tables from rope_tables()",
              a.cos.describe(), a.sin.describe(), dtype_name(table_dtype(a.dtype())));
  DEW_REQUIRE(2 * a.cos.size(1) <= a.x.size(3), "[rope] the tables rotate {} dims; expected at most D = {}",
              2 * a.cos.size(1), a.x.size(3));
  const int64_t P = a.cos.size(0);
  std::vector<double> pos = a.positions.to_f64_vector();
  for (size_t i = 0; i < pos.size(); ++i)
    DEW_REQUIRE(pos[i] >= 0 && int64_t(pos[i]) < P,
                "[rope] positions[{}] is {}; expected 0 <= position < {} (the tables' length)", i,
                int64_t(pos[i]), P);
  return {{a.x.shape(), a.dtype()}};
}

const select::Registry<RopeArgs>& Rope::registry() {
  static const select::Registry<RopeArgs> r = [] {
    select::Registry<RopeArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_rope_cuda, reg);
    avx512::add_rope_cpu(reg);
    avx2::add_rope_cpu(reg);
    add_rope_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<RopeArgs>> Rope::cases(std::string_view) {
  // in_product: x's heads a range of a wider row, as a packed model's q or k (NOTE [rows read in place]).
  auto make = [](Shape s, int64_t rotary, RopeLayout layout, bool packed, bool in_product = false) {
    return [=](DType t, RandomKey k) {
      RopeTables tables = rope_tables(10000.0, rotary, 4096, table_dtype(t));
      Tensor pos = Tensor::empty({s[0], s[1]}, DType::i64);
      for (int64_t b = 0; b < s[0]; ++b)
        for (int64_t i = 0; i < s[1]; ++i)  // packed: documents of 13 tokens restart at 0
          pos.data<int64_t>()[b * s[1] + i] = packed ? i % 13 : 4096 - s[1] + i;
      const Tensor x = in_product ? random_input({s[0], s[1], s[2] + 3, s[3]}, t, k).slice(2, 1, 1 + s[2])
                                  : random_input(s, t, k);
      return RopeArgs{x, pos, tables.cos, tables.sin, layout};
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {
      {"rotate_half_full", {"ci"}, all, make({2, 9, 3, 16}, 16, RopeLayout::rotate_half, false)},
      {"interleaved_partial", {"ci", "edge"}, all, make({1, 7, 2, 20}, 8, RopeLayout::interleaved, false)},
      {"packed_positions", {"ci", "edge"}, all, make({2, 40, 2, 8}, 8, RopeLayout::rotate_half, true)},
      {"heads_of_one_product",
       {"ci", "edge"},
       all,
       make({2, 9, 3, 16}, 16, RopeLayout::rotate_half, false, true)},
      {"gpt2_layer",
       {"bench"},
       {DType::f32, DType::bf16, DType::f16},
       make({4, 1024, 12, 64}, 64, RopeLayout::rotate_half, false)},
      {"llama8b_layer",
       {"bench"},
       {DType::f32, DType::bf16},
       make({1, 512, 32, 128}, 128, RopeLayout::rotate_half, false)}};
}

}  // namespace dew::ops

namespace dew {

RopeTables rope_tables(double theta, int64_t rotary_dim, int64_t max_positions, DType dtype,
                       const Tensor& inv_freq, int64_t first_position) {
  DEW_REQUIRE(rotary_dim > 0 && rotary_dim % 2 == 0,
              "[rope_tables] rotary_dim {}; expected an even number > 0", rotary_dim);
  DEW_REQUIRE(max_positions > 0 && theta > 0,
              "[rope_tables] max_positions {} and theta {}; expected both > 0", max_positions, theta);
  DEW_REQUIRE(dtype == DType::f32 || dtype == DType::f64, "[rope_tables] dtype {}; expected f32 or f64",
              dtype_name(dtype));
  const int64_t half = rotary_dim / 2;
  std::vector<double> freq(static_cast<size_t>(half));
  if (inv_freq.defined()) {
    DEW_REQUIRE(inv_freq.shape() == Shape({half}), "[rope_tables] inv_freq is {}; expected [{}]",
                inv_freq.describe(), half);
    freq = inv_freq.to_f64_vector();
  } else {
    for (int64_t i = 0; i < half; ++i)
      freq[size_t(i)] = std::pow(theta, -2.0 * double(i) / double(rotary_dim));
  }
  DEW_REQUIRE(first_position >= 0 && first_position < max_positions,
              "[rope_tables] first_position {}; expected 0 to max_positions - 1 ({})", first_position,
              max_positions - 1);
  std::vector<double> c(size_t(max_positions * half)), s(c.size());
  for (int64_t p = first_position; p < max_positions; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double angle = double(p) * freq[size_t(i)];
      c[size_t(p * half + i)] = std::cos(angle);
      s[size_t(p * half + i)] = std::sin(angle);
    }
  return {Tensor::from_values(c, {max_positions, half}, dtype),
          Tensor::from_values(s, {max_positions, half}, dtype)};
}

Tensor rope(const Tensor& x, const Tensor& positions, const RopeTables& tables, RopeLayout layout) {
  return ops::run_op<ops::Rope>(ops::RopeArgs{x, positions, tables.cos, tables.sin, layout})[0];
}

}  // namespace dew
