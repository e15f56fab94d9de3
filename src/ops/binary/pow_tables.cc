// pow_tables(): computed on first use from long double's logs and exp2l (64-bit mantissas), so each
// entry is its rounding of the truth.
#include "ops/binary/pow_tables.h"

#include <bit>
#include <cmath>

namespace dew::ops {

namespace {

PowTables make_tables() {
  PowTables t{};
  for (int i = 0; i < 16; ++i) {
    const double low = std::bit_cast<double>(kPowLogOffsetBits + (uint64_t(i) << 48));
    const double high = std::bit_cast<double>(kPowLogOffsetBits + (uint64_t(i + 1) << 48));
    const bool holds_one = low <= 1.0 && 1.0 < high;
    t.inverse_centers[i] = holds_one ? 1.0 : double(2.0L / ((long double)low + high));
    t.log2_centers[i] = double(-std::log2l(t.inverse_centers[i]));
    const uint64_t power = std::bit_cast<uint64_t>(double(std::exp2l(i / 16.0L)));
    t.exp2_sixteenths[i] = std::bit_cast<double>(power - (uint64_t(i) << 48));
  }
  return t;
}

}  // namespace

const PowTables& pow_tables() {
  static const PowTables tables = make_tables();
  return tables;
}

}  // namespace dew::ops
