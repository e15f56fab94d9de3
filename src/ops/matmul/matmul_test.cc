// matmul's own tests beyond OpSuite: refusals of bad arguments, and values on a hand-checked product.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include "error_of.h"
#include "select/requirements.h"

namespace dew {
namespace {

using testing::error_of;

TEST(Matmul, HandCheckedProductWithEpilogue) {
  Tensor a = Tensor::from_values({1, 2, 3, 4}, {2, 2}, DType::f32);
  Tensor b = Tensor::from_values({5, 6, 7, 8}, {2, 2}, DType::f32);
  MatmulOptions o;
  o.bias = Tensor::from_values({-100, 1}, {2}, DType::f32);
  o.activation = Activation::relu;
  o.residual = Tensor::from_values({1, 1, 1, 1}, {2, 2}, DType::f32);
  // a@b = [[19,22],[43,50]]; +bias = [[-81,23],[-57,51]]; relu; +1
  EXPECT_EQ(matmul(a, b, o).to_f64_vector(), (std::vector<double>{1, 24, 1, 52}));
  o = {};
  o.transpose_a = true;
  o.scale = 0.5;
  // a^T@b = [[26,30],[38,44]]
  EXPECT_EQ(matmul(a, b, o).to_f64_vector(), (std::vector<double>{13, 15, 19, 22}));
}

// With a gradient to take, the activation is its own op, so backward uses the kept pre-activation:
// two products (for a and b), not a third to recompute the forward's.
TEST(Matmul, AnActivationUnderGradientKeepsItsPreActivationInsteadOfRecomputingIt) {
  Tensor a = Tensor::from_values({1, -2, 3, 4, 0.5, -1}, {2, 3}, DType::f32).requires_grad_();
  Tensor b = Tensor::from_values({0.5, -1, 2, 1, -0.5, 0.25}, {3, 2}, DType::f32).requires_grad_();
  MatmulOptions o;
  o.activation = Activation::gelu_tanh;
  o.residual = Tensor::from_values({1, 2, 3, 4}, {2, 2}, DType::f32);
  const Tensor y = matmul(a, b, o);
  EXPECT_EQ(y.to_f64_vector(), add(gelu(matmul(a, b), true), o.residual).to_f64_vector());
  reset_routes();
  backward(sum(y));
  int64_t products = 0;
  for (const RouteRecord& r : routes()) products += r.op == "matmul" ? r.count : 0;
  EXPECT_EQ(products, 2);
  EXPECT_TRUE(a.grad().defined() && b.grad().defined());
}

// x @ w^T, with a gated unit after it when `activation` is one (MatmulOptions::glu).
Tensor linear(const Tensor& x, const Tensor& w, Activation activation = Activation::none) {
  MatmulOptions o;
  o.transpose_b = true;
  o.activation = activation;
  o.glu = activation != Activation::none;
  return matmul(x, w, o);
}

// A gated unit after the product (glu): the glu op on the product's two halves, bit for bit, whether the
// product computes it from its accumulators (a decode batch's rows in lanes) or runs the glu op after it.
TEST(Matmul, AGatedUnitIsTheGluOpOnTheProductsHalves) {
  for (const auto& [rows, activation] : {std::pair{32, Activation::silu},
                                         {3, Activation::gelu_tanh},
                                         {1, Activation::gelu_erf},
                                         {40, Activation::gelu_tanh}}) {
    Tensor x = Tensor::empty({rows, 96}, DType::f32), w = Tensor::empty({2 * 150, 96}, DType::f32);
    fill_normal(x, {7, uint64_t(rows), 0}, 0, 1);
    fill_normal(w, {7, 100, 0}, 0, 0.2);
    const Tensor z = linear(x, w);
    const Tensor gate = z.slice(-1, 0, 150), up = z.slice(-1, 150, 300);
    const Tensor expected = activation == Activation::silu
                                ? swiglu(gate, up)
                                : geglu(gate, up, activation == Activation::gelu_tanh);
    EXPECT_EQ(linear(x, w, activation).to_f64_vector(), expected.to_f64_vector()) << rows << " rows";
  }
}

// With a gradient to take, the gated unit runs as the product and then the glu op, whose tape holds the
// product's halves for the backward.
TEST(Matmul, AGatedUnitUnderGradientIsTheProductThenTheGluOp) {
  Tensor x = Tensor::empty({5, 12}, DType::f32), w = Tensor::empty({16, 12}, DType::f32);
  fill_normal(x, {8, 1, 0}, 0, 1);
  fill_normal(w, {8, 2, 0}, 0, 1);
  const Tensor fused_x = x.clone().requires_grad_(), composed_x = x.clone().requires_grad_();
  const Tensor y = linear(fused_x, w, Activation::silu);
  backward(sum(square(y)));
  const Tensor z = linear(composed_x, w);
  const Tensor expected = swiglu(z.slice(-1, 0, 8), z.slice(-1, 8, 16));
  backward(sum(square(expected)));
  EXPECT_EQ(y.to_f64_vector(), expected.to_f64_vector());
  EXPECT_EQ(fused_x.grad().to_f64_vector(), composed_x.grad().to_f64_vector());
}

// tf32 lets a GPU round f32 operands to TF32; the CPU computes IEEE f32 whatever it says, so the
// bits are those of the plain product (on a GPU, only the cuda implementation reads the flag).
TEST(Matmul, Tf32IsOnlyAPermissionTheCpuDoesNotTake) {
  Tensor a = Tensor::empty({33, 70}, DType::f32), b = Tensor::empty({70, 9}, DType::f32);
  fill_normal(a, {5, 1, 0}, 0, 1);
  fill_normal(b, {5, 2, 0}, 0, 1);
  MatmulOptions tf32;
  tf32.tf32 = true;
  EXPECT_EQ(matmul(a, b, tf32).to_f64_vector(), matmul(a, b).to_f64_vector());
}

// NOTE [rows one at a time]: the tiles' rows come out bit for bit as each row alone would, whichever
// tile, tail or partial tile a row falls in (batch-invariant serving depends on it).
TEST(Matmul, DotTilesGiveEachRowTheBitsItHasAlone) {
  const int64_t M = 13, K = 83, N = 10;  // a partial tile of rows, a tail of K, a partial tile of columns
  Tensor x = Tensor::empty({M, K}, DType::f32), w = Tensor::empty({N, K}, DType::f32);
  fill_normal(x, {9, 1, 0}, 0, 1);
  fill_normal(w, {9, 2, 0}, 0, 1);
  MatmulOptions o;
  o.transpose_b = true;
  int tiers = 0;
  for (const auto& [isa, impl] : {std::pair{select::Isa::avx2, "cpu.avx2.dot_tiles"},
                                  std::pair{select::Isa::avx512, "cpu.avx512.dot_tiles"}}) {
    if (!select::cpu_supports(isa)) continue;
    ++tiers;
    set_impl_overrides(std::string("matmul:") + impl);
    const std::vector<double> all = matmul(x, w, o).to_f64_vector();
    for (int64_t m = 0; m < M; ++m) {
      const std::vector<double> alone = matmul(x.slice(0, m, m + 1).contiguous(), w, o).to_f64_vector();
      for (int64_t n = 0; n < N; ++n)
        EXPECT_EQ(alone[size_t(n)], all[size_t(m * N + n)]) << impl << " row " << m << " column " << n;
    }
  }
  set_impl_overrides("");
  if (tiers == 0) GTEST_SKIP() << "this CPU has neither the avx2 nor the avx512 tier";
}

TEST(Matmul, RefusesBadShapesAndDtypesNamingThem) {
  Tensor a = Tensor::zeros({2, 3}, DType::f32), b = Tensor::zeros({4, 5}, DType::f32);
  EXPECT_NE(
      error_of([&] { matmul(a, b); }).find("[matmul] inner dims differ: op(a) is [2,3] and op(b) is [4,5]"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              matmul(a, Tensor::zeros({3, 5}, DType::bf16));
            }).find("expected every operand in a's dtype f32"),
            std::string::npos);
  MatmulOptions o;
  o.bias = Tensor::zeros({4}, DType::f32);
  EXPECT_NE(error_of([&] {
              matmul(a, Tensor::zeros({3, 5}, DType::f32), o);
            }).find("bias is f32[4] (cpu); expected shape [5]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { matmul(Tensor::zeros({3}, DType::f32), a); }).find("expected both of rank >= 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              matmul(Tensor::zeros({2, 3}, DType::i32), Tensor::zeros({3, 2}, DType::i32));
            }).find("expected a floating dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              matmul(Tensor::zeros({2, 2, 3}, DType::f32), Tensor::zeros({3, 3, 2}, DType::f32));
            }).find("do not broadcast"),
            std::string::npos);
  MatmulOptions glu;
  glu.glu = true;
  glu.activation = Activation::relu;
  EXPECT_NE(
      error_of([&] {
        matmul(a, Tensor::zeros({3, 6}, DType::f32), glu);
      }).find("[matmul] glu with activation relu, 6 columns, f32; expected silu, gelu_erf or gelu_tanh"),
      std::string::npos);
  glu.activation = Activation::silu;
  EXPECT_NE(error_of([&] {
              matmul(a, Tensor::zeros({3, 5}, DType::f32), glu);
            }).find("5 columns, f32; expected"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              matmul(Tensor::zeros({2, 3}, DType::bf16), Tensor::zeros({3, 6}, DType::bf16), glu);
            }).find("6 columns, bf16; expected"),
            std::string::npos);
  glu.residual = Tensor::zeros({2, 3}, DType::f32);
  EXPECT_NE(error_of([&] {
              matmul(a, Tensor::zeros({3, 6}, DType::f32), glu);
            }).find("6 columns and a residual, f32; expected"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
