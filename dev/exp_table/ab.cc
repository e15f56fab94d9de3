// The exps before and after their sixteenths forms (NOTE [exp by sixteenths], NOTE [compensated exp]):
// Cephes' exp_f32_within_2ulp and compensated exp_f32 against vector_math.h's, one core, in L1/L2: the
// cross_entropy block (max, then exp(x - m), stored, summed) timed per logit, and each form's error
// against double exp over every 97th float of [-104, 89]. 2026-12-02, Zen 4: within_2ulp 0.293 -> 0.250
// ns, 1.003 -> 1.058 ulp; exp_f32 0.387 -> 0.291 ns, 0.658 -> 0.541 ulp (docs/perf.md). Build
// (header-only, no library):
//   g++ -std=c++20 -O3 -DNDEBUG -fno-math-errno -fno-trapping-math -ffp-contract=off -DDEW_KERNEL_NS=avx512
//   -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx2 -mfma -mf16c -mprefer-vector-width=512
//   -Iinclude -Isrc dev/exp_table/ab.cc -o /tmp/exp_ab   (avx2: -DDEW_KERNEL_NS=avx2 -mavx2 -mfma -mf16c)
#ifndef DEW_KERNEL_NS
#define DEW_KERNEL_NS avx512
#endif
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "ops/float_vec.h"
#include "ops/vector_math.h"
using namespace dew;
using namespace dew::ops::DEW_KERNEL_NS;

// The form exp_f32_within_2ulp had before (Cephes' degree-6 polynomial on |r| <= ln 2 / 2).
template <class F>
F exp_cephes(F x) {
  const auto [n, rh] = exp_argument(x);
  const F r = mul_add(n, F(kLn2Low), rh);
  return times_pow2(mul_add(exp_tail_cephes(r), r * r, r) + F(1.0f), n);
}
// exp_f32 before (compensated, Cephes' polynomial on |r| <= ln 2 / 2).
template <class F>
F exp_compensated_cephes(F x) {
  const auto [n, rh] = exp_argument(x);
  const F rl = n * F(kLn2Low);
  const F r = rh + rl;
  const F e = (rh - r) + rl;
  const F p = exp_tail_cephes(r);
  const F hi = F(1.0f) + r;
  const F lo = (F(1.0f) - hi) + r;
  return times_pow2(hi + (lo + mul_add(p, r * r, e)), n);
}
struct CompensatedCephes {
  static FloatVec exp(FloatVec x) { return exp_compensated_cephes(x); }
  static float exp(float x) { return exp_compensated_cephes(x); }
};
struct Accurate {
  static FloatVec exp(FloatVec x) { return exp_f32(x); }
  static float exp(float x) { return exp_f32(x); }
};
struct Cephes {
  static FloatVec exp(FloatVec x) { return exp_cephes(x); }
  static float exp(float x) { return exp_cephes(x); }
};
struct Table {
  static FloatVec exp(FloatVec x) { return exp_f32_within_2ulp(x); }
  static float exp(float x) { return exp_f32_within_2ulp(x); }
};

template <class E>
__attribute__((noinline)) double block(const bf16* x, float* e, int64_t n, float m0) {
  const float bm = row_max_vec(x, n);
  const FloatVec mb = bm > m0 ? bm : m0;
  FloatVec s = 0.0f;
  for (int64_t i = 0; i + kVecWidth <= n; i += kVecWidth) {
    const FloatVec v = E::exp(load_vec(x + i) - mb);
    store_vec(e + i, v);
    s += v;
  }
  return lanes_sum(s);
}

template <class E>
double time_ns(const std::vector<bf16>& x, std::vector<float>& e, int64_t blocks) {
  double best = 1e9, sink = 0;
  for (int r = 0; r < 15; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 200; ++k)
      for (int64_t b = 0; b < blocks; ++b)
        sink += block<E>(x.data() + b * 1024, e.data() + b * 1024, 1024, -1e30f);
    best = std::min(best,
                    std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                        (200.0 * blocks * 1024));
  }
  if (sink == 12345) std::puts("");
  return best;
}

template <class E>
void errors(const char* name) {
  double worst = 0, sum2 = 0;
  int64_t count = 0, rounded = 0;
  // every 97th float of [-104, 89], through the vector and the scalar body
  for (int sign = 0; sign < 2; ++sign)
    for (uint32_t bits = 0;; bits += 97) {
      const float x = std::bit_cast<float>(bits | (sign ? 0x80000000u : 0u));
      if (sign ? x < -104.0f : x > 89.0f) break;
      alignas(64) float in[kVecWidth], out[kVecWidth];
      for (int l = 0; l < kVecWidth; ++l) in[l] = x;
      store_vec(out, E::exp(load_vec(in)));
      const double truth = std::exp(double(x));
      if (truth < 1.2e-38 || truth > 3.4e38) continue;
      const double ulp = std::ldexp(1.0, std::ilogb(truth) - 23);
      const double err = std::fabs(double(out[0]) - truth) / ulp;
      const double err_scalar = std::fabs(double(E::exp(x)) - truth) / ulp;
      worst = std::max({worst, err, err_scalar});
      rounded += out[0] == float(truth);
      sum2 += err * err;
      ++count;
    }
  std::printf("%-10s worst %.3f ulp, rms %.3f ulp, %.2f%% correctly rounded, over %lld floats\n", name, worst,
              std::sqrt(sum2 / count), 100.0 * rounded / count, (long long)count);
  // specials
  alignas(64) float in[16] = {-INFINITY, INFINITY, NAN,    -200.0f, 200.0f, -103.9f, 88.7f,  0.0f,
                              -0.0f,     1e-30f,   -87.5f, -1e6f,   1e6f,   88.72f,  -88.0f, 1.0f};
  alignas(64) float out[16];
  for (int l = 0; l < 16; l += kVecWidth) store_vec(out + l, E::exp(load_vec(in + l)));
  for (int l = 0; l < 16; ++l)
    std::printf("  exp(%g) = %g / %g (scalar %g)\n", in[l], out[l], std::exp(double(in[l])), E::exp(in[l]));
}

int main() {
  errors<Cephes>("cephes");
  errors<Table>("table");
  errors<CompensatedCephes>("exp_f32 before");
  errors<Accurate>("exp_f32");
  std::mt19937 g(1);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (int64_t blocks : {8, 64}) {
    std::vector<bf16> x(size_t(blocks * 1024));
    for (auto& v : x) v = dew::ops::narrow<bf16>(d(g));
    std::vector<float> e(x.size());
    for (int round = 0; round < 3; ++round)
      std::printf("blocks %lld, ns a logit: cephes %.4f, table %.4f; exp_f32 before %.4f, now %.4f\n",
                  (long long)blocks, time_ns<Cephes>(x, e, blocks), time_ns<Table>(x, e, blocks),
                  time_ns<CompensatedCephes>(x, e, blocks), time_ns<Accurate>(x, e, blocks));
  }
}
