// Branch-free float math that compilers vectorize: included inside a DEW_KERNEL_NS namespace (NOTE
// [kernel namespaces]), so each instruction set gets its own copy.
// exp_f32: float in, float out, float throughout, within 0.66 ulp (measured over 2^20 draws) (NOTE
// [compensated exp]); the gate holds it to libm's correctly rounded expf, which it matches in 98% of draws.
// NaN stays NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include "ops/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [compensated exp]
// exp(x) = 2^n exp(r), n = round(x / ln 2). Two roundings would cost a float polynomial accuracy the
// gate measures (RMS ratio 1.4-1.55 against expf): the reduced argument r and the sum 1 + r + ...
// So r = rh + rl keeps its rounding error e (rh = x - n c1 is exact: c1 has 9 bits), and
// exp(r) = 1 + r + r^2 p(r) + e is summed with 1 + r split exactly into hi + lo (Fast2Sum), leaving one
// rounding at the end. 2^n is applied as two factors so that subnormal results round once.
inline float exp_f32(float x) {
  x = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);  // exp(-104) rounds to 0, exp(89) to inf
  const float shifted = std::fma(x, 1.44269504088896341f, 0x1.8p23f);  // n in the low mantissa bits
  const float n = shifted - 0x1.8p23f;
  const float rh = std::fma(n, -0.693359375f, x);
  const float rl = n * 2.12194440e-4f;  // ln 2 - c1
  const float r = rh + rl;              // |r| <= 0.347
  const float e = (rh - r) + rl;        // r's rounding error
  float p = 1.9875691500e-4f;           // Cephes' coefficients of (exp(r) - 1 - r) / r^2
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float hi = 1.0f + r;
  const float lo = (1.0f - hi) + r;
  const float y = hi + (lo + std::fma(p, r * r, e));
  const int32_t ni = std::bit_cast<int32_t>(shifted) - 0x4B400000, n1 = ni >> 1, n2 = ni - n1;
  return y * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((n2 + 127) << 23);
}

inline double exp_f32(double x) {
  return std::exp(x);
}  // f64 kernels keep libm's exp

// exp_f32_within_2ulp: float throughout (Cody-Waite reduction, Cephes' degree-6 polynomial, 2^n as two
// factors so results round once into the subnormals); Cephes documents about 1-2 ulp for it. For
// kernels whose own rounding dwarfs it (attention: a score carries gamma_D * sum |q k|); switching the
// flash_gemm forward from exp_f32 took the GPT-2 layer from 80.5 to 61.9 ms (dew bench ops, 2026-11-29).
inline float exp_f32_within_2ulp(float x) {
  x = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float y = std::fma(p, r * r, r) + 1.0f;
  const int32_t ni = int32_t(n), n1 = ni / 2, n2 = ni - n1;
  return y * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((n2 + 127) << 23);
}

// The kernels' exp: exp_f32 where FastExp, libm's otherwise (the portable builds).
template <bool FastExp, class Acc>
inline Acc exp_with(Acc x) {
  if constexpr (FastExp)
    return exp_f32(x);
  else
    return std::exp(x);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
