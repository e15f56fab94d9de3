// The f32 erf-GELU's accuracy (NOTE [erf-GELU in float]): gelu_erf_f32 and its derivative against
// double erfc over eight ranges of x, as ulps of the float result: the largest, the RMS, and how often
// the result is not the correctly rounded float. The derivative's relative error is large only near its
// zero (x = -0.75), as any float evaluation's is.
// Build (after the project's build): g++ -std=c++20 -O2 -fno-math-errno -fno-trapping-math -ffp-contract=off
//   -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx2 -mfma -mf16c -Iinclude -Isrc
//   dev/gelu_accuracy/gelu_accuracy.cc build/libdew_core.a -lfmt -o /tmp/gelu_accuracy
#define DEW_KERNEL_NS avx512
#include <cmath>
#include <cstdio>
#include "ops/vector_math.h"
namespace k = dew::ops::avx512;
static double ulps(float got, double truth) {
  float t = float(truth);
  double ulp = std::nextafter(std::fabs(t), INFINITY) - std::fabs(t);
  if (std::fabs(t) < 1.2e-38) ulp = 1.4e-45;
  return std::fabs(double(got) - truth) / ulp;
}
int main() {
  const double edges[] = {-13, -6, -2, -0.5, 0, 0.5, 2, 6, 13};
  for (int e = 0; e + 1 < 9; ++e) {
    double worst = 0, sum2 = 0, worst_d = 0;
    long n = 0;
    int incorrect = 0;
    for (int i = 0; i < 200000; ++i) {
      float x = float(edges[e] + (edges[e + 1] - edges[e]) * (i + 0.5) / 200000);
      double xd = x, truth = 0.5 * xd * std::erfc(-xd / std::sqrt(2.0));
      double dtruth =
          0.5 * std::erfc(-xd / std::sqrt(2.0)) + xd * std::exp(-0.5 * xd * xd) / std::sqrt(2 * M_PI);
      float got = k::gelu_erf_f32(x);
      double u = ulps(got, truth);
      worst = std::max(worst, u);
      sum2 += u * u;
      ++n;
      incorrect += got != float(truth);
      worst_d = std::max(worst_d, ulps(k::gelu_erf_derivative_f32(x), dtruth));
    }
    printf("[%g, %g): gelu max %.2f ulp, rms %.3f, %.1f%% not correctly rounded; derivative max %.2f ulp\n",
           edges[e], edges[e + 1], worst, std::sqrt(sum2 / n), 100.0 * incorrect / n, worst_d);
  }
}
