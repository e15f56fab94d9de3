// bench/decode_products: a decode batch's f32 products with their weights coming from memory, as in a
// decode step: 32 rows against 64 different matrices in turn (the default model's up projection, 1024 x
// 384, and down projection, 384 x 1024) and against 8 different 8192 x 384 ones (its head), each product's
// implementation as the selector chooses and with cpu.avx512.rows_in_lanes forbidden, alternating: 3 rounds
// of 400 calls. Usage: build/bench/decode_products (docs/perf.md, "Serving").
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/tensor.h>
#include <fmt/format.h>

#include <chrono>
#include <tuple>
#include <vector>

namespace {

using namespace dew;

// GFLOP/s of `calls` products of x with the weights in turn.
double rate(const Tensor& x, const std::vector<Tensor>& weights, int calls) {
  MatmulOptions linear;
  linear.transpose_b = true;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) matmul(x, weights[size_t(i) % weights.size()], linear);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return 2.0 * double(x.size(0)) * double(x.size(1)) * double(weights[0].size(0)) * calls / s / 1e9;
}

}  // namespace

int main() {
  // (K, N, copies): the up projection, the down projection (K 1024: weight rows 4 KB apart, x's transposition
  // past L1) and the head.
  for (const auto& [K, N, copies] :
       {std::tuple<int64_t, int64_t, int>{384, 1024, 64}, {1024, 384, 64}, {384, 8192, 8}}) {
    Tensor x = Tensor::empty({32, K}, DType::f32);
    fill_normal(x, {1, 0, 0}, 0, 1);
    std::vector<Tensor> weights;
    for (int i = 0; i < copies; ++i) {
      weights.push_back(Tensor::empty({N, K}, DType::f32));
      fill_normal(weights.back(), {2, uint64_t(i), 0}, 0, 1);
    }
    for (int round = 1; round <= 3; ++round) {
      set_impl_overrides("");
      const double chosen = rate(x, weights, 400);
      set_impl_overrides("matmul:-cpu.avx512.rows_in_lanes");
      const double without = rate(x, weights, 400);
      fmt::print(
          "32 x {} x {}, {} weights in turn, round {}: {:.0f} GFLOP/s chosen, {:.0f} without "
          "rows_in_lanes\n",
          N, K, copies, round, chosen, without);
    }
  }
  set_impl_overrides("");
}
