// The tables of f32 pow on the CPU tiers (pow.h: NOTE [pow through double]), computed once in long
// double and rounded. Not the arithmetic itself; bf16 and f16 pow's float log has its own (NOTE [logs by
// sixteenths], vector_math.h).
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
};

const PowTables& pow_tables();

}  // namespace dew::ops
