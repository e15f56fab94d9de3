// bench/grouped_matmul_loop: grouped_matmul against a loop of Dew's dense matmuls, one per expert
// (each group's rows times its weight, written into the output), on the bench cases' shapes
// (src/ops/grouped_matmul/grouped_matmul.cc), f32 and bf16, alternating in one process: 3 rounds of
// medians of 15 calls. Usage: build/bench/grouped_matmul_loop (docs/perf.md, "Grouped products").
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/tensor.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace {

using namespace dew;

double median_ms(const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < 15; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Case {
  const char* name;
  std::vector<int64_t> loads;
  int64_t K, N;
};

void measure(const Case& c, DType dtype) {
  int64_t T = 0;
  for (const int64_t l : c.loads) T += l;
  const int64_t G = int64_t(c.loads.size());
  Tensor x = Tensor::empty({T, c.K}, DType::f32), w = Tensor::empty({G, c.N, c.K}, DType::f32);
  fill_normal(x, {1, 0, 0}, 0, 1);
  fill_normal(w, {2, 0, 0}, 0, 1);
  x = as_dtype(x, dtype);
  w = as_dtype(w, dtype);
  const Tensor sizes =
      Tensor::from_values(std::vector<double>(c.loads.begin(), c.loads.end()), {G}, DType::i64);
  MatmulOptions linear;
  linear.transpose_b = true;
  Tensor out = Tensor::empty({T, c.N}, dtype);
  const double gflop = 2.0 * double(T) * double(c.K) * double(c.N) / 1e9;
  for (int round = 1; round <= 3; ++round) {
    const double grouped = median_ms([&] { grouped_matmul(x, w, sizes, true); });
    const double loop = median_ms([&] {
      int64_t first = 0;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t rows = c.loads[size_t(g)];
        if (rows > 0)
          out.slice(0, first, first + rows)
              .copy_from(matmul(x.slice(0, first, first + rows), w.select(0, g), linear));
        first += rows;
      }
    });
    fmt::print(
        "{} {} round {}: grouped_matmul {:.3f} ms ({:.0f} GFLOP/s), loop of matmuls {:.3f} ms ({:.0f})\n",
        c.name, dtype_name(dtype), round, grouped, gflop / grouped * 1e3, loop, gflop / loop * 1e3);
  }
}

}  // namespace

int main() {
  std::vector<int64_t> qwen3_moe(64);
  for (int64_t e = 0; e < 64; ++e) qwen3_moe[size_t(e)] = (e * 37) % 65;
  const std::vector<Case> cases = {{"mixtral_small_up", {200, 96, 160, 40, 176, 120, 152, 80}, 512, 1408},
                                   {"qwen3_moe_small_up", qwen3_moe, 1024, 384}};
  for (const DType dtype : {DType::f32, DType::bf16})
    for (const Case& c : cases) measure(c, dtype);
}
