// A/B in one process, one core, L2-resident rows: each map through the scalar body (auto-vectorized, the
// chunked path of map_elements) and through the tier's FloatVec, F32x16 or F32x8 (NOTE [one body for
// scalar and vector float functions]). Build (after the project's build), for the avx512 tier:
//   g++ -std=c++20 -O3 -DNDEBUG -fno-math-errno -fno-trapping-math -ffp-contract=off -DDEW_KERNEL_NS=avx512
//   -Iinclude -Isrc dev/f32x16_ab/ab.cc build/libdew_core.a -lfmt -o /tmp/ab
// plus -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx2 -mfma -mf16c -mprefer-vector-width=512
// (the lambdas here call the kernels' always-inline functions); for the avx2 tier -DDEW_KERNEL_NS=avx2
// -mavx2 -mfma -mf16c. N=12582912 in the environment runs rows of that many elements (out of cache, the
// bench's unary size) instead of L2-resident ones (NOTE [prefetching maps]).
#ifndef DEW_KERNEL_NS
#define DEW_KERNEL_NS avx512
#endif
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "ops/map_elements.h"
#include "ops/vector_math.h"
namespace k = dew::ops::DEW_KERNEL_NS;
template <class T, class F>
__attribute__((noinline)) void run(const T* x, T* y, int64_t n, F f) {
  k::map_elements<T>(std::array<const T*, 1>{x}, std::array<T*, 1>{y}, n, f);
}
static int reps = 200;
template <class T, class F>
double time_it(std::vector<T>& x, std::vector<T>& y, F f) {
  double best = 1e9;
  for (int r = 0; r < 9; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) run(x.data(), y.data(), int64_t(x.size()), f);
    best = std::min(best,
                    std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                        (double(reps) * x.size()));
  }
  return best;
}
// One row of the table: f (a generic lambda) through the scalar body, then through FloatVec.
template <class T, class F>
void compare(const char* name, std::vector<T>& x, std::vector<T>& y, F f) {
  const double scalar = time_it(
      x, y, [f](float v) __attribute__((always_inline)) { return f(v); });
  printf("%-10s scalar %.3f  vector %.3f ns/elem\n", name, scalar, time_it(x, y, f));
}
#define DEW_AB(name, x, y, call) \
  compare(                       \
      name, x, y, []<class V>(V v) __attribute__((always_inline)) { return call; })

int main() {
  const int64_t n = getenv("N") ? atoll(getenv("N")) : 32768;
  if (getenv("N")) reps = 5;
  std::vector<float> x(n), y(n);
  std::vector<dew::bf16> xb(n), yb(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = float((i * 2654435761u) % 10000) / 1000.f - 5.f;
    xb[i] = dew::f32_to_bf16(x[i]);
  }
  for (int rep = 0; rep < 3; ++rep) {
    DEW_AB("f32 exp", x, y, k::exp_f32(v));
    DEW_AB("bf16 exp", xb, yb, k::exp_f32(v));
    DEW_AB("bf16 sigm", xb, yb, k::times_sigmoid_f32(V(1.0f), v));
    DEW_AB("bf16 gelu", xb, yb, k::gelu_erf_f32(v));
    DEW_AB("f32 gelu", x, y, k::gelu_erf_f32(v));
    DEW_AB("f32 exp2ulp", x, y, k::exp_f32_within_2ulp(v));
    DEW_AB("f32 tanh", x, y, k::tanh_f32(v));
    DEW_AB("f32 log", x, y, k::log_f32(v + V(6.0f)));
  }
}
