// Per-op cost of a chain of adds on f32[4]: plain, recorded onto the tape, the backward through the
// recorded chain, and inside a jvp. Best of reps, in microseconds per op.
#include "autodiff_bench.h"

#include <dew/autodiff.h>
#include <dew/ops.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <functional>

namespace dew::bench {
namespace {

double best_seconds(int reps, const std::function<void()>& run) {
  double best = 1e30;
  run();  // warm-up: allocator caches, first-use statics
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int run_autodiff_bench(const AutodiffBenchOptions& o) {
  const Tensor b = Tensor::full({4}, 1e-3, DType::f32);
  auto chain = [&](Tensor y) {
    for (int i = 0; i < o.ops; ++i) y = add(y, b);
    return y;
  };
  const Tensor x = Tensor::full({4}, 1.0, DType::f32);
  const double plain = best_seconds(o.reps, [&] { chain(x); });
  Tensor leaf = x.detach().requires_grad_();
  const double recorded = best_seconds(o.reps, [&] { chain(leaf); });
  double backward_only = 1e30;
  for (int r = 0; r <= o.reps; ++r) {
    leaf.zero_grad();
    const Tensor loss = sum(chain(leaf));
    const auto t0 = std::chrono::steady_clock::now();
    backward(loss);
    if (r > 0)
      backward_only = std::min(backward_only,
                               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double forward_mode = best_seconds(o.reps, [&] {
    jvp([&](const std::vector<Tensor>& p) { return std::vector<Tensor>{chain(p[0])}; }, {x}, {x});
  });
  const double per = 1e6 / o.ops;
  fmt::print("autodiff overhead: add on f32[4], a chain of {} ops, best of {}\n", o.ops, o.reps);
  fmt::print("{:<34} {:>10}\n", "mode", "us per op");
  fmt::print("{:<34} {:>10.3f}\n", "plain (nothing needs a gradient)", plain * per);
  fmt::print("{:<34} {:>10.3f}\n", "recorded onto the tape", recorded * per);
  fmt::print("{:<34} {:>10.3f}\n", "backward through the chain", backward_only * per);
  fmt::print("{:<34} {:>10.3f}\n", "inside a jvp (tangents)", forward_mode * per);
  fmt::print(
      "{{\"bench\":\"autodiff\",\"ops\":{},\"plain_us\":{:.4f},\"recorded_us\":{:.4f},\"backward_us\":{:.4f},"
      "\"jvp_us\":{:.4f}}}\n",
      o.ops, plain * per, recorded * per, backward_only * per, forward_mode * per);
  return 0;
}

}  // namespace dew::bench
