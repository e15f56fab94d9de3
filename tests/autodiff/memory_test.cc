// Memory of reverse mode, from the allocator's counters (deterministic, unlike time): a rule must not
// materialize what the math does not need.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

namespace dew {
namespace {

// A Linear layer over batched input: d W is one (N, K) product over all rows, not a per-batch stack of
// weight-sized products summed afterwards (64 x 512 kB here, before the fix).
TEST(ReverseModeMemory, ALinearsWeightGradientIsOneProductNotOnePerBatch) {
  const Tensor x = Tensor::full({64, 2, 32}, 0.5, DType::f32);
  Tensor w = Tensor::full({4096, 32}, 0.25, DType::f32);
  w.requires_grad_();
  MatmulOptions linear;
  linear.transpose_b = true;
  const Tensor loss = sum(matmul(x, w, linear));  // y (64,2,4096): 2 MB
  const int64_t before = cpu_memory_stats().bytes_in_use;
  reset_peak_memory();
  backward(loss);
  const int64_t transient = cpu_memory_stats().peak_bytes - before;
  EXPECT_LT(transient, int64_t(8) << 20) << "peak of the backward beyond what the forward held";
  // d loss / d W[n, k] = sum of x[..., k] over the 128 rows.
  const std::vector<double> g = w.grad().to_f64_vector();
  EXPECT_EQ(g.front(), 64.0);
  EXPECT_EQ(g.back(), 64.0);
}

// Forward mode through attention is fused (NOTE [attention tangent]): like the forward, it never
// holds the (B,H,T,S) scores — 2 MB here, against 64 kB for q and each tangent.
TEST(ForwardModeMemory, AttentionsTangentNeverMaterializesTheScores) {
  const int64_t B = 1, T = 512, H = 2, D = 16;
  auto random = [](uint64_t stream) {
    Tensor t = Tensor::empty({B, T, H, D}, DType::f32);
    fill_normal(t, {5, stream, 0}, 0.0, 1.0);
    return t;
  };
  const Tensor q = random(0), k = random(1), v = random(2), tq = random(3), tk = random(4), tv = random(5);
  AttentionOptions causal;
  causal.causal = true;
  const int64_t before = cpu_memory_stats().bytes_in_use;
  reset_peak_memory();
  const JvpResult r = jvp(
      [&](const std::vector<Tensor>& p) {
        const AttentionResult a = attention(p[0], p[1], p[2], causal);
        return std::vector<Tensor>{a.out, a.lse};
      },
      {q, k, v}, {tq, tk, tv});
  const int64_t peak = cpu_memory_stats().peak_bytes - before;
  EXPECT_LT(peak, B * H * T * T * 4 / 4) << "peak of the jvp beyond its inputs";
  EXPECT_EQ(r.tangents[0].shape(), q.shape());
  EXPECT_EQ(r.tangents[1].shape(), (Shape{B, H, T}));
}

}  // namespace
}  // namespace dew
