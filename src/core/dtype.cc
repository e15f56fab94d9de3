// dtype names, sizes and rounding constants; the scalar conversions themselves are inline in dtype.h.
#include <dew/dtype.h>
#include <dew/error.h>

#include <cmath>

namespace dew {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::bf16:
    case DType::f16:
      return 2;
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f64:
      return "f64";
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::i64:
      return "i64";
    case DType::i32:
      return "i32";
    case DType::u8:
      return "u8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType t :
       {DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64, DType::i32, DType::u8, DType::boolean})
    if (dtype_name(t) == name) return t;
  fail("dtype '{}' is not known; expected one of f64, f32, bf16, f16, i64, i32, u8, bool", name);
}

bool is_floating(DType t) {
  return t == DType::f64 || t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f64:
      return 0x1p-53;
    case DType::f32:
      return 0x1p-24;
    case DType::bf16:
      return 0x1p-8;
    case DType::f16:
      return 0x1p-11;
    default:
      return 0.0;
  }
}

double smallest_subnormal(DType t) {
  switch (t) {
    case DType::f64:
      return 0x1p-1074;
    case DType::f32:
      return 0x1p-149;
    case DType::bf16:
      return 0x1p-133;
    case DType::f16:
      return 0x1p-24;
    default:
      return 0.0;
  }
}

float f64_to_f32_round_odd(double d) {
  float f = float(d);
  if (std::isnan(d) || double(f) == d) return f;
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);  // truncate toward zero
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);          // mark inexact
}

}  // namespace dew
