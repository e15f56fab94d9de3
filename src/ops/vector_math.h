// Branch-free float math that compilers vectorize: included inside a DEW_KERNEL_NS namespace (NOTE
// [kernel namespaces]), so each instruction set gets its own copy.
// exp_f32: Cody-Waite reduction by ln 2 (two constants), Cephes' degree-6 polynomial, and the scale
// 2^n applied as two factors so results round once into the subnormals; about 1 ulp.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#ifndef DEW_KERNEL_NS
#error "include vector_math.h after defining DEW_KERNEL_NS"
#endif

namespace dew::ops::DEW_KERNEL_NS {

inline float exp_f32(float x) {
  x = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);  // exp(-104) rounds to 0, exp(89) to inf; NaN stays
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
  const float s1 = std::bit_cast<float>((n1 + 127) << 23), s2 = std::bit_cast<float>((n2 + 127) << 23);
  return y * s1 * s2;
}

inline double exp_f32(double x) {
  return std::exp(x);
}  // f64 kernels keep libm's exp

}  // namespace dew::ops::DEW_KERNEL_NS
