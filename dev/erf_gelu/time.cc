// erf-GELU's ways on one core, a 65,536-value row in L1 (every value, then N(0, 2) draws), for bf16 or
// f16 (the argument): by the gathers (cpu.avx512.table's loop), computed (bf16 with 9, 8, 7 or 6 terms of
// Q / 2: NOTE [erf-GELU for bf16 and f16 results]), and computed and looked up at once in several
// proportions (NOTE [maps by vectors and lookups at once]); first how many of the 65,536 inputs each
// computed form gives other bits than the table's. The ordering moves with the host: in quiet minutes
// bf16's 64 + 16 ran 20% under computed alone, in minutes when the gathers slowed to 25 us 20% over it
// (docs/perf.md, twenty-fifth and twenty-sixth sessions).
// Build (after the project's build):
//   g++ -std=c++20 -O2 -Isrc -Iinclude dev/erf_gelu/time.cc -o /tmp/erf_gelu build/libdew_ops.a
//   build/libdew_select.a build/libdew_core.a build/libdew_cuda.a -ldnnl -lfmt -fopenmp -ldl -lpthread
//   -L/usr/local/cuda/lib64 -lcudart_static -lrt
// Run: /tmp/erf_gelu bf16|f16
#define DEW_KERNEL_NS avx512
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ops/f32x16.h"
#include "ops/unary/unary.h"
#include "ops/vector_math.h"

using namespace dew;
using namespace dew::ops;
using namespace dew::ops::avx512;

DEW_ISA_BEGIN
namespace {

// Q / 2 fits on t in [0.17, 1] (tools/fit_erfcx.py with the term count changed; 7 is kHalfErfcxOverT's,
// 9 kHalfErfcxOverTForF16's).
constexpr std::array<float, 8> k8 = {0.141158236664f, 0.13895977769f,   0.139295728883f, 0.0252556464019f,
                                     0.179611909974f, -0.158596607839f, 0.030586328344f, 0.00372914664096f};
constexpr std::array<float, 6> k6 = {0.140490691461f, 0.148634221543f,  0.0859732423883f,
                                     0.168912045823f, -0.020524578731f, -0.0234928538434f};

template <int Terms>
[[gnu::always_inline]] inline F32x16 gelu_terms(F32x16 x) {
  if constexpr (Terms == 7) return gelu_erf_rounding_to<bf16>(x);
  const F32x16 t = F32x16(1.0f) / mul_add(magnitude(x), F32x16(0.35355339059327376220f), F32x16(1.0f));
  const F32x16 e = exp2_by_thirty_seconds(x * x * F32x16(float(-0.5 * kInverseLn2)));
  F32x16 q;
  if constexpr (Terms == 9) q = horner(t, kHalfErfcxOverTForF16);
  if constexpr (Terms == 8) q = horner(t, k8);
  if constexpr (Terms == 6) q = horner(t, k6);
  const F32x16 h = e * (t * q);
  return x * avx512::select(x < F32x16(0.0f), h, F32x16(1.0f) - h);
}

__attribute__((noinline)) void by_gathers(const uint16_t* t, const uint16_t* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    const __m512i index = _mm512_maskz_cvtepu16_epi32(kAllLanes, _mm256_maskz_loadu_epi16(kAllLanes, x + i));
    _mm512_mask_cvtepi32_storeu_epi16(
        y + i, kAllLanes, _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), kAllLanes, index, t, 2));
    lookup4s(t, x + i + 16, y + i + 16, 16);
  }
}

// Vec steps of 32 computed and Scalar values looked up, a step of 32 Vec + Scalar.
template <int Terms, int Vec, int Scalar>
__attribute__((noinline)) void computed(const uint16_t* t, const uint16_t* x, uint16_t* y, int64_t n) {
  constexpr int64_t W = 32 * Vec + Scalar;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    lookup4s(t, x + i + 32 * Vec, y + i + 32 * Vec, Scalar);
    for (int k = 0; k < Vec; ++k) {
      const EvenOdd16 v = load_even_odd(reinterpret_cast<const bf16*>(x + i + 32 * k));
      if (!store_even_odd(reinterpret_cast<bf16*>(y + i + 32 * k), gelu_terms<Terms>(v.even),
                          gelu_terms<Terms>(v.odd)))
        for (int j = 0; j < 32; ++j) y[i + 32 * k + j] = t[x[i + 32 * k + j]];  // subnormals: the table
    }
  }
  for (; i < n; ++i) y[i] = t[x[i]];
}

// f16: Vec steps of 16 computed (gelu_erf_rounding_to<f16>, 9 terms) and Scalar values looked up.
template <int Vec, int Scalar>
__attribute__((noinline)) void computed_f16(const uint16_t* t, const uint16_t* x, uint16_t* y, int64_t n) {
  constexpr int64_t W = 16 * Vec + Scalar;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    lookup4s(t, x + i + 16 * Vec, y + i + 16 * Vec, Scalar);
    for (int k = 0; k < Vec; ++k)
      store_vec(reinterpret_cast<f16*>(y + i + 16 * k),
                gelu_erf_rounding_to<f16>(load_vec(reinterpret_cast<const f16*>(x + i + 16 * k))));
  }
  for (; i < n; ++i) y[i] = t[x[i]];
}

}  // namespace
DEW_ISA_END

int main(int argc, char** argv) {
  const bool is_f16 = argc > 1 && std::string(argv[1]) == "f16";
  const uint16_t* t = unary_table_bits(UnaryFn::gelu, is_f16 ? DType::f16 : DType::bf16);
  const int64_t n = 65536;
  std::vector<uint16_t> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = uint16_t(i);
  const auto differ = [&](const char* name, void (*f)(const uint16_t*, const uint16_t*, uint16_t*, int64_t)) {
    f(t, x.data(), y.data(), n);
    const uint16_t exponent = is_f16 ? 0x7c00 : 0x7f80;
    int d = 0;
    for (int64_t i = 0; i < n; ++i) d += (x[i] & exponent) != exponent && y[i] != t[x[i]];  // NaN, inf aside
    std::printf("%-10s %d of the 65,536 inputs differ from the table\n", name, d);
  };
  if (is_f16) {
    differ("9 terms", computed_f16<1, 0>);
  } else {
    differ("9 terms", computed<9, 1, 0>);
    differ("8 terms", computed<8, 1, 0>);
    differ("7 terms", computed<7, 1, 0>);
    differ("6 terms", computed<6, 1, 0>);
  }
  uint64_t s = 12345;  // N(0, 2) by Box-Muller
  const auto uniform = [&] {
    return double((s = s * 6364136223846793005ull + 1442695040888963407ull) >> 11) * 0x1p-53;
  };
  for (int64_t i = 0; i < n; ++i) {
    const float v =
        float(2 * std::sqrt(-2 * std::log(uniform() + 1e-300)) * std::cos(6.283185307179586 * uniform()));
    x[i] = is_f16 ? f32_to_f16(v).bits : f32_to_bf16(v).bits;
  }
  const auto time = [&](const char* name, void (*f)(const uint16_t*, const uint16_t*, uint16_t*, int64_t)) {
    std::vector<double> us;
    for (int r = 0; r < 7; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < 1000; ++k) f(t, x.data(), y.data(), n);
      us.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
    }
    std::sort(us.begin(), us.end());
    std::printf("%-24s min %.2f median %.2f us\n", name, us[0], us[3]);
  };
  time("gathers", by_gathers);
  if (is_f16) {
    time("computed", computed_f16<1, 0>);
    time("16 + 4", computed_f16<1, 4>);
    time("32 + 8", computed_f16<2, 8>);
    time("32 + 16", computed_f16<2, 16>);
    time("48 + 16 (kept)", computed_f16<3, 16>);
    time("64 + 16", computed_f16<4, 16>);
    time("64 + 32", computed_f16<4, 32>);
    return 0;
  }
  time("9 terms", computed<9, 1, 0>);
  time("8 terms", computed<8, 1, 0>);
  time("7 terms", computed<7, 1, 0>);
  time("6 terms", computed<6, 1, 0>);
  time("7 terms, 32 + 8", computed<7, 1, 8>);
  time("7 terms, 32 + 16", computed<7, 1, 16>);
  time("7 terms, 32 + 32", computed<7, 1, 32>);
  time("7 terms, 64 + 16 (kept)", computed<7, 2, 16>);
  time("7 terms, 128 + 32", computed<7, 4, 32>);
}
