// Ceilings: STREAM triad bandwidth, the cores' FMA peak and the direct sgemm rate of the library matmul
// links.
#include "ceilings.h"

#include <dew/runtime.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "cuda_bench.h"

namespace dew::bench {
namespace {

template <class F>
double time_of(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `steps` rounds of 12 independent multiply-adds on vectors of Lanes floats; the result depends on all
// of them, so that none is optimized away, and each chain starts from its own value: identical chains
// were folded into one by the compiler. The chains' latency is hidden by their number.
template <int Lanes>
struct FloatLanes;  // GCC's vector of Lanes floats (its vector_size takes no template argument)
template <>
struct FloatLanes<16> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct FloatLanes<8> {
  typedef float type __attribute__((vector_size(32)));
};

template <int Lanes>
[[gnu::always_inline]] inline float fma_chains(int64_t steps) {
  using V = typename FloatLanes<Lanes>::type;
  const V factor = V{} + 0.999999f, term = V{} + 1e-7f;
  V a[12];
  for (int i = 0; i < 12; ++i) a[i] = V{} + (1.0f + 0.001f * float(i));
  for (int64_t s = 0; s < steps; ++s)
#pragma GCC unroll 12
    for (V& x : a) x = x * factor + term;  // one fused multiply-add each (fp-contract below)
  float total = 0;
  for (const V& x : a)
    for (int l = 0; l < Lanes; ++l) total += x[l];
  return total;
}

[[gnu::target("avx512f"), gnu::optimize("fp-contract=fast")]] float fma_chains_avx512(int64_t steps) {
  return fma_chains<16>(steps);
}
[[gnu::target("avx2,fma"), gnu::optimize("fp-contract=fast")]] float fma_chains_avx2(int64_t steps) {
  return fma_chains<8>(steps);
}

}  // namespace

double fma_peak_gflop_per_s(int reps) {
  const bool avx512 = __builtin_cpu_supports("avx512f"),
             avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!avx512 && !avx2) return 0;
  const int64_t steps = 4'000'000, lanes = avx512 ? 16 : 8, threads = num_threads();
  double best = 0;
  std::vector<float> sink(static_cast<size_t>(threads));
  for (int r = 0; r < reps; ++r) {
    const double seconds = time_of([&] {
      parallel_for(threads, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t)
          sink[size_t(t)] = avx512 ? fma_chains_avx512(steps) : fma_chains_avx2(steps);
      });
    });
    best = std::max(best, double(threads) * double(steps) * 12 * double(lanes) * 2 / seconds * 1e-9);
  }
  return best;
}

TriadProbe::TriadProbe(int megabytes)
    : a_(Tensor::full({int64_t(megabytes) * (1 << 20) / 4}, 0.0, DType::f32)),
      b_(Tensor::full({int64_t(megabytes) * (1 << 20) / 4}, 1.0, DType::f32)),
      c_(Tensor::full({int64_t(megabytes) * (1 << 20) / 4}, 2.0, DType::f32)) {}  // filled: pages mapped

double TriadProbe::gb_per_s() {
  const int64_t n = a_.numel();
  float *pa = a_.data<float>(), *pb = b_.data<float>(), *pc = c_.data<float>();
  const double seconds = time_of([&] {
    parallel_for(n, 1 << 16, [&](int64_t i0, int64_t i1) {
    // Unrolled: the one-vector loop's speed moved with where the linker happened to place it (a
    // loop across a 64-byte boundary read 54-60 GB/s where the same loop within one read 70-77).
#pragma GCC unroll 8
      for (int64_t i = i0; i < i1; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    });
  });
  return 3.0 * double(n) * 4 / seconds * 1e-9;
}

double triad_gb_per_s(int megabytes, int reps) {
  TriadProbe probe(megabytes);
  double best = 0;
  for (int r = 0; r < reps; ++r) best = std::max(best, probe.gb_per_s());
  return best;
}

double sgemm_seconds(long M, long N, long K, bool transpose_b, int reps) {
  std::vector<float> A(size_t(M * K), 0.5f), B(size_t(K * N), 0.25f), C(size_t(M * N));
  auto run = [&] {
    dnnl_sgemm('N', transpose_b ? 'T' : 'N', M, N, K, 1.0f, A.data(), K, B.data(), transpose_b ? K : N, 0.0f,
               C.data(), N);
  };
  run();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) t.push_back(time_of(run));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double sgemm_gflop_per_s(int n, int reps) {
  std::vector<float> A(size_t(n) * n, 0.5f), B(size_t(n) * n, 0.25f), C(size_t(n) * n);
  double best = 1e30;
  for (int r = 0; r <= reps; ++r) {
    double t =
        time_of([&] { dnnl_sgemm('N', 'N', n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n); });
    if (r > 0) best = std::min(best, t);  // the first call is warm-up
  }
  return 2.0 * n * double(n) * n / best * 1e-9;
}

}  // namespace dew::bench
