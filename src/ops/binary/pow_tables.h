// The tables of pow on the CPU tiers (pow.h): f32's double arithmetic (NOTE [pow through double]) and
// the float log of bf16 and f16, computed once in long double and rounded. Not the arithmetic itself.
#pragma once

#include <cstdint>

namespace dew::ops {

// a = 2^k z with z in [kPowLogOffset, 2 kPowLogOffset) (0.699..1.398), split by the double's bits:
// z's sixteenth i is bits 48-51 of bits(z) - bits(kPowLogOffset); glibc's powf splits the same way.
inline constexpr uint64_t kPowLogOffsetBits = 0x3fe6600000000000;  // 0.69921875

struct PowTables {
  // For z's sixteenth i: 1/c for c near its middle (exactly 1 in the sixteenth that holds 1, so that
  // log2 a = log2(1 + r) there, exact relative to a near 1), and log2 c for that c = 1 / (1/c).
  alignas(64) double inverse_centers[16];
  alignas(64) double log2_centers[16];
  // 2^(i/16)'s bits less i << 48: adding q << 48 for q = 16 n + i gives 2^(q/16) = 2^n 2^(i/16).
  alignas(64) double exp2_sixteenths[16];
  // For m in [0.7, 1.5) nearest j/16 (j = 11..24, at index j mod 16): 16/j rounded to float (1 for
  // j = 16), and log2 c for c = 1 / (16/j) (bf16 and f16 pow's log2, pow.h).
  alignas(64) float inverse_sixteenths[16];
  alignas(64) float log2_sixteenths[16];
};

const PowTables& pow_tables();

}  // namespace dew::ops
