// Ceilings: STREAM triad bandwidth and the direct sgemm rate of the library matmul links.
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

}  // namespace

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
