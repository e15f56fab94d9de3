// dtype conversions against an independent oracle: the nearest representable value found by search
// over every finite value of the narrow type, ties to the even bit pattern.
#include <dew/dtype.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dew {
namespace {

// All finite non-negative values of a 16-bit format, sorted, as (value, bits).
template <class ToFloat>
std::vector<std::pair<double, uint16_t>> finite_values(ToFloat to_float) {
  std::vector<std::pair<double, uint16_t>> v;
  for (uint32_t b = 0; b < 0x8000; ++b) {
    double x = to_float(uint16_t(b));
    if (std::isfinite(x)) v.push_back({x, uint16_t(b)});
  }
  std::sort(v.begin(), v.end());
  return v;
}

// Round-to-nearest-even by search; `overflow` is the magnitude from which the answer is Inf.
uint16_t oracle_round(const std::vector<std::pair<double, uint16_t>>& table, double x, double overflow,
                      uint16_t inf_bits) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (a >= overflow) return sign | inf_bits;
  auto hi = std::lower_bound(table.begin(), table.end(), std::make_pair(a, uint16_t(0)));
  if (hi == table.begin()) return sign | hi->second;
  auto lo = hi - 1;
  if (hi == table.end()) return sign | lo->second;
  double dl = a - lo->first, dh = hi->first - a;
  if (dl < dh) return sign | lo->second;
  if (dh < dl) return sign | hi->second;
  return sign | ((lo->second & 1) == 0 ? lo->second : hi->second);
}

std::vector<double> probe_values() {
  std::vector<double> v;
  for (int64_t i = 0; i < 200000; ++i) {
    auto w = philox4x32_10({uint32_t(i), 0, 0, 0}, {7, 9});
    float f = std::bit_cast<float>(w[0]);
    if (std::isfinite(f)) v.push_back(f);
    // values near the f16 range and its subnormals, and exact ties
    v.push_back(std::ldexp(1.0 + double(w[1] % 4096) / 2048.0, int(w[2] % 40) - 28));
  }
  return v;
}

TEST(Dtype, Bf16RoundsToNearestEvenLikeTheOracle) {
  auto table = finite_values([](uint16_t b) { return double(bf16_to_f32(bf16{b})); });
  double overflow = (2.0 - 0x1p-8) * 0x1p127;
  for (double x : probe_values()) {
    float f = float(x);
    ASSERT_EQ(f32_to_bf16(f).bits, oracle_round(table, f, overflow, 0x7f80)) << f;
    ASSERT_EQ(f64_to_bf16(x).bits, oracle_round(table, x, overflow, 0x7f80)) << x;
  }
}

TEST(Dtype, F16RoundsToNearestEvenLikeTheOracle) {
  auto table = finite_values([](uint16_t b) { return double(f16_to_f32(f16{b})); });
  for (double x : probe_values()) {
    float f = float(x);
    ASSERT_EQ(f32_to_f16(f).bits, oracle_round(table, f, 65520.0, 0x7c00)) << f;
    ASSERT_EQ(f64_to_f16(x).bits, oracle_round(table, x, 65520.0, 0x7c00)) << x;
  }
}

TEST(Dtype, EveryHalfValueRoundTripsThroughF32) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float x = f16_to_f32(f16{uint16_t(b)});
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(x)))) << b;
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(x))));
    } else {
      EXPECT_EQ(f32_to_f16(x).bits, b);
    }
    float y = bf16_to_f32(bf16{uint16_t(b)});
    if (!std::isnan(y)) {
      EXPECT_EQ(f32_to_bf16(y).bits, b);
    }
  }
}

TEST(Dtype, KeepsInfinityNanAndSignedZero) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_bf16(inf).bits, 0x7f80);
  EXPECT_EQ(f32_to_bf16(-inf).bits, 0xff80);
  EXPECT_EQ(f32_to_f16(-inf).bits, 0xfc00);
  EXPECT_EQ(f32_to_f16(-0.0f).bits, 0x8000);
  EXPECT_EQ(f32_to_bf16(-0.0f).bits, 0x8000);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(-std::nanf("")))));
  EXPECT_TRUE(std::isnan(f16_to_f32(f64_to_f16(std::nan("")))));
  EXPECT_EQ(f32_to_f16(65519.0f).bits, 0x7bff);  // just below the overflow threshold
  EXPECT_EQ(f32_to_f16(65520.0f).bits, 0x7c00);
}

// A double just above a bf16 tie that rounds to the tie in f32: rounding twice would go to even (1.0).
TEST(Dtype, F64ToNarrowAvoidsDoubleRounding) {
  double x = 1.0 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(bf16_to_f32(f64_to_bf16(x)), 1.0f + 0x1p-7f);
  double y = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(f16_to_f32(f64_to_f16(y)), 1.0f + 0x1p-10f);
}

TEST(Dtype, NamesParseAndUnknownNamesAreRefused) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  try {
    parse_dtype("float32");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of f64, f32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dew
