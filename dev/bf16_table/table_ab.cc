// Exploration, not linked: a bf16 -> bf16 unary map by table against the erf-GELU bf16 map's arithmetic
// (0.53 ns per element in L2 on the fifteenth session's Xeon, dev/f32x16_ab). The table holds the
// float64 GELU of every bf16 rounded once (dtype.h's f64_to_bf16), so its results are correctly
// rounded; it is read with AVX-512 gathers (from a float table, 256 KB) or one scalar load per element
// (from a bf16 table, 128 KB). Build:
//   g++ -std=c++20 -O3 -mavx512f -mavx512bw -mavx512vl -mavx512bf16 -Iinclude dev/bf16_table/table_ab.cc
//   build/libdew_core.a -lfmt -o /tmp/table_ab
// 2026-12-01, one core: gather 0.21-0.23 ns per element in L2 (0.26-0.31 out of cache), scalar 0.25-0.26
// (0.32-0.35); see docs/perf.md "A bf16 table instead of arithmetic". 2026-12-02, out of cache: scalar
// 0.52-0.66, packed (four a 64-bit load) 0.42-0.50, each asking 2 KB ahead 0.32-0.35 and 0.32-0.33,
// gather 0.29-0.32; src/ops/unary/table.cc is the packed form asking ahead (docs/perf.md "Unary maps by
// table").
#include <dew/dtype.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

static float table_f32[65536];      // the bf16 result, widened
static uint16_t table_bf16[65536];  // the bf16 result's bits

__attribute__((noinline)) void run_gather(const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const __m512i index = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    const __m512 v = _mm512_i32gather_ps(index, table_f32, 4);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
  }
}
__attribute__((noinline)) void run_scalar(const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table_bf16[x[i]];
}

// Four lookups a 64-bit load and store: half the load and store instructions of run_scalar.
__attribute__((noinline)) void run_packed(const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i + 4 <= n; i += 4) {
    uint64_t v;
    std::memcpy(&v, x + i, 8);
    const uint64_t r = uint64_t(table_bf16[v & 0xFFFF]) | uint64_t(table_bf16[(v >> 16) & 0xFFFF]) << 16 |
                       uint64_t(table_bf16[(v >> 32) & 0xFFFF]) << 32 | uint64_t(table_bf16[v >> 48]) << 48;
    std::memcpy(y + i, &r, 8);
  }
}
// run_scalar asking 2 KB ahead for its input and output (NOTE [prefetching maps]).
__attribute__((noinline)) void run_scalar_prefetch(const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t c = 0; c < n; c += 32) {
    __builtin_prefetch(x + c + 1024, 0, 3);
    __builtin_prefetch(y + c + 1024, 1, 3);
    for (int64_t i = c; i < std::min(n, c + 32); ++i) y[i] = table_bf16[x[i]];
  }
}
__attribute__((noinline)) void run_packed_prefetch(const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t c = 0; c < n; c += 32) {
    __builtin_prefetch(x + c + 1024, 0, 3);
    __builtin_prefetch(y + c + 1024, 1, 3);
    run_packed(x + c, y + c, std::min<int64_t>(32, n - c));
  }
}

template <class F>
double ns_per_element(F f, const uint16_t* x, uint16_t* y, int64_t n, int reps) {
  double best = 1e9;
  for (int r = 0; r < 9; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f(x, y, n);
    best = std::min(best,
                    std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                        (double(reps) * double(n)));
  }
  return best;
}

int main() {
  for (uint32_t b = 0; b < 65536; ++b) {
    const double x = double(dew::bf16_to_f32(dew::bf16{uint16_t(b)}));
    const dew::bf16 g = dew::f64_to_bf16(0.5 * x * std::erfc(-x / std::sqrt(2.0)));
    table_bf16[b] = g.bits;
    table_f32[b] = dew::bf16_to_f32(g);
  }
  for (int64_t n : {int64_t(32768), int64_t(12582912)}) {  // L2-resident rows; the bench's size
    std::vector<uint16_t> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      x[size_t(i)] = dew::f32_to_bf16(float((i * 2654435761u) % 10000) / 1000.f - 5.f).bits;
    const int reps = n < 100000 ? 200 : 5;
    printf("n %ld: gather %.3f  scalar %.3f  packed %.3f  scalar+prefetch %.3f  packed+prefetch %.3f ns/elem\n",
           long(n), ns_per_element(run_gather, x.data(), y.data(), n, reps),
           ns_per_element(run_scalar, x.data(), y.data(), n, reps),
           ns_per_element(run_packed, x.data(), y.data(), n, reps),
           ns_per_element(run_scalar_prefetch, x.data(), y.data(), n, reps),
           ns_per_element(run_packed_prefetch, x.data(), y.data(), n, reps));
  }
}
