// Element types and their conversions. Not a tensor: just the scalar vocabulary every layer shares.
// Contract: narrowing conversions (f32/f64 -> bf16/f16) round to nearest even, keep the sign of zero,
// keep NaN as NaN and overflow to Inf; widening conversions are exact.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

namespace dew {

enum class DType : uint8_t { f64, f32, bf16, f16, i64, i32, u8, boolean };

struct bf16 {
  uint16_t bits;
};
struct f16 {
  uint16_t bits;
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Parses "f32", "bf16", ...; throws dew::Error naming the accepted spellings.
DType parse_dtype(std::string_view name);
bool is_floating(DType t);

// Unit roundoff u = 2^-p of a floating dtype (half an ulp at 1); 0 for integer types.
double unit_roundoff(DType t);
// Smallest positive subnormal of a floating dtype: the absolute error floor of rounding near zero.
double smallest_subnormal(DType t);

inline float bf16_to_f32(bf16 h) {
  return std::bit_cast<float>(uint32_t(h.bits) << 16);
}
// Written as a select, not a branch, so that loops storing bf16 vectorize.
inline bf16 f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;  // ties to even
  const uint32_t quiet_nan = (x >> 16) | 0x40u;                     // sign kept
  return bf16{uint16_t((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded)};
}

// NOTE [half conversions]: branch-light float<->half conversions after Maratyszcza's FP16 method. They
// rely on IEEE float arithmetic in round-to-nearest mode without flush-to-zero, which is how Dew runs.
inline float f16_to_f32(f16 h) {
  const uint32_t w = uint32_t(h.bits) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normalized = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t result = sign | (two_w < (1u << 27) ? std::bit_cast<uint32_t>(denormalized)
                                                     : std::bit_cast<uint32_t>(normalized));
  return std::bit_cast<float>(result);
}
inline f16 f32_to_f16(float f) {
  float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  return f16{uint16_t((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign))};
}

// double -> float rounded to odd: exact when representable, else the truncation with its last bit set.
// Rounding that result to bf16/f16 (>= 2 fewer bits) equals rounding the double directly (no double
// rounding).
float f64_to_f32_round_odd(double d);
inline bf16 f64_to_bf16(double d) {
  return f32_to_bf16(f64_to_f32_round_odd(d));
}
inline f16 f64_to_f16(double d) {
  return f32_to_f16(f64_to_f32_round_odd(d));
}

// Scalar conversions used by every kernel: to the compute type and back with the rules above.
template <class T>
struct Scalar;
template <>
struct Scalar<double> {
  static constexpr DType dtype = DType::f64;
  static double to_f64(double v) { return v; }
  static double from_f64(double v) { return v; }
};
template <>
struct Scalar<float> {
  static constexpr DType dtype = DType::f32;
  static double to_f64(float v) { return v; }
  static float from_f64(double v) { return float(v); }
};
template <>
struct Scalar<bf16> {
  static constexpr DType dtype = DType::bf16;
  static double to_f64(bf16 v) { return bf16_to_f32(v); }
  static bf16 from_f64(double v) { return f64_to_bf16(v); }
};
template <>
struct Scalar<f16> {
  static constexpr DType dtype = DType::f16;
  static double to_f64(f16 v) { return f16_to_f32(v); }
  static f16 from_f64(double v) { return f64_to_f16(v); }
};
template <>
struct Scalar<int64_t> {
  static constexpr DType dtype = DType::i64;
  static double to_f64(int64_t v) { return double(v); }
  static int64_t from_f64(double v) { return int64_t(v); }
};
template <>
struct Scalar<int32_t> {
  static constexpr DType dtype = DType::i32;
  static double to_f64(int32_t v) { return double(v); }
  static int32_t from_f64(double v) { return int32_t(v); }
};
template <>
struct Scalar<uint8_t> {
  static constexpr DType dtype = DType::u8;
  static double to_f64(uint8_t v) { return double(v); }
  static uint8_t from_f64(double v) { return uint8_t(v); }
};
template <>
struct Scalar<bool> {
  static constexpr DType dtype = DType::boolean;
  static double to_f64(bool v) { return v ? 1.0 : 0.0; }
  static bool from_f64(double v) { return v != 0.0; }
};

// Calls f(T{}) with T the C++ type of t.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f64:
      return f(double{});
    case DType::f32:
      return f(float{});
    case DType::bf16:
      return f(bf16{});
    case DType::f16:
      return f(f16{});
    case DType::i64:
      return f(int64_t{});
    case DType::i32:
      return f(int32_t{});
    case DType::u8:
      return f(uint8_t{});
    case DType::boolean:
      return f(bool{});
  }
  __builtin_unreachable();
}

}  // namespace dew
