// attention's own tests beyond OpSuite: hand-checked values, masks seen through outputs, refusals.
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"

#include <omp.h>

#include <cmath>

namespace dew {
namespace {

using testing::error_of;

// The sgemm-based attention runs each chunk of its work on one OpenMP thread; the thread that called
// it keeps its own OpenMP thread count, so the GEMMs after it still use every thread.
TEST(Attention, LeavesTheCallersOpenMpThreadsAsTheyWere) {
  omp_set_num_threads(2);
  Tensor q = Tensor::empty({1, 256, 2, 64}, DType::f32), k = Tensor::empty({1, 256, 2, 64}, DType::f32);
  Tensor v = Tensor::empty({1, 256, 2, 64}, DType::f32);
  fill_normal(q, {.seed = 1}, 0, 1);
  fill_normal(k, {.seed = 2}, 0, 1);
  fill_normal(v, {.seed = 3}, 0, 1);
  AttentionOptions o;
  o.causal = true;
  reset_routes();
  const AttentionResult r = attention(q, k, v, o);
  (void)attention_backward(r.out, q, k, v, r, o);
  bool flash_gemm = false;
  for (const RouteRecord& route : routes())
    flash_gemm = flash_gemm || route.implementation.find("flash_gemm") != std::string::npos;
  if (!flash_gemm) GTEST_SKIP() << "no sgemm-based attention on this CPU";
  EXPECT_EQ(omp_get_max_threads(), 2);
}

// With all scores equal, each query averages the values it may see: causal rows see a prefix.
TEST(Attention, EqualScoresAverageTheVisibleValues) {
  const int64_t S = 4;
  Tensor q = Tensor::zeros({1, S, 1, 2}, DType::f64), k = Tensor::zeros({1, S, 1, 2}, DType::f64);
  Tensor v = Tensor::from_values({1, 10, 2, 20, 3, 30, 4, 40}, {1, S, 1, 2}, DType::f64);
  AttentionOptions o;
  o.causal = true;
  auto r = attention(q, k, v, o);
  EXPECT_EQ(r.out.to_f64_vector(), (std::vector<double>{1, 10, 1.5, 15, 2, 20, 2.5, 25}));
  auto lse = r.lse.to_f64_vector();
  for (int64_t t = 0; t < S; ++t)
    EXPECT_EQ(lse[size_t(t)], std::log(double(t + 1)));  // sums of ones are exact
  o.window = 2;                                          // query t sees keys t-1 and t
  EXPECT_EQ(attention(q, k, v, o).out.to_f64_vector(),
            (std::vector<double>{1, 10, 1.5, 15, 2.5, 25, 3.5, 35}));
}

TEST(Attention, SegmentsKeepPackedDocumentsApart) {
  Tensor q = Tensor::zeros({1, 4, 1, 1}, DType::f64), k = Tensor::zeros({1, 4, 1, 1}, DType::f64);
  Tensor v = Tensor::from_values({1, 2, 3, 4}, {1, 4, 1, 1}, DType::f64);
  AttentionOptions o;
  o.causal = true;
  o.q_segments = Tensor::from_values({0, 0, 1, 1}, {1, 4}, DType::i64);
  o.k_segments = o.q_segments;
  EXPECT_EQ(attention(q, k, v, o).out.to_f64_vector(), (std::vector<double>{1, 1.5, 3, 3.5}));
}

TEST(Attention, RefusesMismatchedHeadsAndShapes) {
  Tensor q = Tensor::zeros({1, 4, 3, 8}, DType::f32), k = Tensor::zeros({1, 4, 2, 8}, DType::f32);
  EXPECT_NE(error_of([&] { attention(q, k, k); }).find("expected the KV heads to divide the query heads"),
            std::string::npos);
  Tensor k8 = Tensor::zeros({1, 4, 1, 4}, DType::f32);
  EXPECT_NE(error_of([&] {
              attention(q, k8, k8);
            }).find("[attention] k is f32[1,4,1,4] (cpu); expected f32(B=1,S,Hkv,D=8)"),
            std::string::npos);
  AttentionOptions o;
  o.q_segments = Tensor::zeros({1, 4}, DType::i64);
  Tensor k1 = Tensor::zeros({1, 4, 1, 8}, DType::f32);
  EXPECT_NE(error_of([&] { attention(q, k1, k1, o); }).find("expected both or neither"), std::string::npos);
}

}  // namespace
}  // namespace dew
