// Representative routes, asserted through the route log: which implementation the selector picks
// for each op family on this machine (the widest CPU tier the CPU has; portable below AVX2).
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"
#include "routes.h"
#include "select/requirements.h"

namespace dew {
namespace {

using testing::error_of;

Tensor ones(const Shape& s, DType t) {
  return Tensor::full(s, 0.5, t);
}

std::string fast_or_portable(const char* fast) {
  return select::cpu_supports(select::Isa::avx2) ? fast : "portable";
}

// The tiered ops' choice: cpu.avx512 over cpu.avx2 over portable.
std::string widest_tier() {
  if (select::cpu_supports(select::Isa::avx512)) return "cpu.avx512";
  return fast_or_portable("cpu.avx2");
}

TEST(Routes, EachFamilyTakesItsFastPathWhereEligible) {
  EXPECT_ROUTE("rms_norm", widest_tier(), rms_norm(ones({4, 64}, DType::f32), Tensor(), 1e-6));
  EXPECT_ROUTE("rms_norm", widest_tier(), rms_norm(ones({4, 64}, DType::f16), Tensor(), 1e-6));
  EXPECT_ROUTE("rms_norm", "portable", rms_norm(ones({4, 64}, DType::f64), Tensor(), 1e-6));
  EXPECT_ROUTE("exp", widest_tier(), exp(ones({4, 64}, DType::f32)));
  EXPECT_ROUTE("tanh", widest_tier(), tanh(ones({4, 64}, DType::f32)));
  // 16-bit data by table: on bf16 and f16 every function but the bit moves and square, with AVX-512
  // gathers where the CPU has them; there exp, log, sqrt, rsqrt, tanh, sigmoid, silu and both GELUs are
  // computed on f16, and on bf16 where the CPU narrows it natively (NOTE [cheap functions on AVX-512
  // vectors]).
  const bool avx512 = select::cpu_supports(select::Isa::avx512);
  const std::string table = avx512 ? "cpu.avx512.table" : "cpu.table";
  EXPECT_ROUTE("tanh", avx512 ? "cpu.avx512" : "cpu.table", tanh(ones({4, 64}, DType::f16)));
  EXPECT_ROUTE("gelu", avx512 ? "cpu.avx512" : "cpu.table", gelu(ones({4, 64}, DType::f16), false));
  EXPECT_ROUTE("gelu", avx512 && cpu_features().avx512bf16 ? "cpu.avx512" : table,
               gelu(ones({4, 64}, DType::bf16), false));
  EXPECT_ROUTE("exp", avx512 ? "cpu.avx512" : "cpu.table", exp(ones({4, 64}, DType::f16)));
  EXPECT_ROUTE("exp", avx512 && cpu_features().avx512bf16 ? "cpu.avx512" : table,
               exp(ones({4, 64}, DType::bf16)));
  EXPECT_ROUTE("relu", widest_tier(), relu(ones({4, 64}, DType::f16)));
  EXPECT_ROUTE("relu", widest_tier(), relu(ones({4, 64}, DType::bf16)));
  EXPECT_ROUTE("relu", "portable", relu(ones({4, 64}, DType::f64)));
  EXPECT_ROUTE("add", widest_tier(), add(ones({4, 8}, DType::bf16), ones({8}, DType::bf16)));
  EXPECT_ROUTE("pow", widest_tier(), pow(ones({4, 8}, DType::f32), ones({4, 8}, DType::f32)));
  Tensor q = ones({1, 8, 2, 16}, DType::f32), kv = ones({1, 8, 1, 16}, DType::f32);
  EXPECT_ROUTE("attention", widest_tier() == "portable" ? "portable" : widest_tier() + ".flash_gemm",
               attention(q, kv, kv));
  EXPECT_ROUTE("attention", "portable",
               attention(ones({1, 8, 2, 16}, DType::f64), ones({1, 8, 1, 16}, DType::f64),
                         ones({1, 8, 1, 16}, DType::f64)));
  Tensor logits = ones({3, 10}, DType::f32), targets = Tensor::from_values({1, 2, 3}, {3}, DType::i64);
  EXPECT_ROUTE("cross_entropy", widest_tier(), cross_entropy(logits, targets));
}

TEST(Routes, MismatchedDtypesAndShapesAreRefusedNamingBoth) {
  EXPECT_NE(error_of([] {
              add(ones({2, 3}, DType::f32), ones({2, 3}, DType::bf16));
            }).find("[add] a is f32[2,3] (cpu) and b is bf16[2,3] (cpu); expected one dtype"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              mul(ones({2, 3}, DType::f32), ones({4}, DType::f32));
            }).find("[mul] shapes [2,3] and [4] do not broadcast"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              rms_norm(ones({2, 3}, DType::f32), ones({4}, DType::f32), 1e-6);
            }).find("[rms_norm] weight is f32[4] (cpu); expected f32[3]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              sum(ones({2, 3}, DType::f32), {0, 0});
            }).find("repeat an axis"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
