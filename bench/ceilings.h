// This machine's ceilings, measured in the same run as the thing compared against them
// (the host drifts from minute to minute: docs/perf.md).
#pragma once

#include <dew/tensor.h>

namespace dew::bench {

// STREAM triad a = b + s*c over three arrays of `megabytes` each, on the thread pool; GB/s
// counting 3 arrays moved (2 reads, 1 write). The arrays are filled once, so each pass times only
// the triad.
class TriadProbe {
 public:
  explicit TriadProbe(int megabytes = 400);
  double gb_per_s();  // one pass
 private:
  Tensor a_, b_, c_;
};
// The best of `reps` passes of a fresh TriadProbe.
double triad_gb_per_s(int megabytes = 400, int reps = 5);
// The cores' f32 multiply-add peak: 12 independent FMA chains on each pool thread, on the widest
// vectors the CPU has (AVX-512, else AVX2 with FMA, else none: 0); GFLOP/s, best of `reps`.
double fma_peak_gflop_per_s(int reps = 5);
// oneDNN sgemm called directly at M = N = K = n: GFLOP/s, best of `reps`.
double sgemm_gflop_per_s(int n = 2048, int reps = 5);
// oneDNN sgemm called directly on a row-major (M,K) x (K,N) or x (N,K)^T product; seconds, median.
double sgemm_seconds(long M, long N, long K, bool transpose_b, int reps);

}  // namespace dew::bench
