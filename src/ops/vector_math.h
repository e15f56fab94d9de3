// Branch-free float math that compilers vectorize: included inside a DEW_KERNEL_NS namespace (NOTE
// [kernel namespaces]), so each instruction set gets its own copy.
// exp_f32: float in, float out, computed in double (reduction by ln 2, degree-8 Taylor polynomial,
// relative error ~2e-10) so the one rounding to float is nearly always the correct one: libm's expf is
// correctly rounded too, and the gate holds a fast path to that accuracy. NaN stays NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#ifndef DEW_KERNEL_NS
#error "include vector_math.h after defining DEW_KERNEL_NS"
#endif

namespace dew::ops::DEW_KERNEL_NS {

inline float exp_f32(float xf) {
  double x =
      xf < -104.0f ? -104.0 : (xf > 89.0f ? 89.0 : double(xf));  // exp(-104) rounds to 0, exp(89) to inf
  const double shifted = x * 1.4426950408889634 + 0x1.8p52;      // n = round(x / ln 2) in the low bits
  const double n = shifted - 0x1.8p52;
  const double r = std::fma(n, -0.6931471805599453, x);  // |r| <= 0.347
  double p = 1.0 / 40320;
  p = std::fma(p, r, 1.0 / 5040);
  p = std::fma(p, r, 1.0 / 720);
  p = std::fma(p, r, 1.0 / 120);
  p = std::fma(p, r, 1.0 / 24);
  p = std::fma(p, r, 1.0 / 6);
  p = std::fma(p, r, 0.5);
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  const double scale = std::bit_cast<double>((std::bit_cast<uint64_t>(shifted) + 1023) << 52);  // 2^n
  return float(p * scale);
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
