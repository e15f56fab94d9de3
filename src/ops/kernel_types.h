// Compute types for kernels: storage dtype T accumulates in AccumulatorOf<T> (double for f64, float
// otherwise), with widen/narrow the only conversions (rounding rules of dtype.h).
#pragma once

#include <dew/dtype.h>
#include <dew/error.h>

#include <type_traits>

namespace dew::ops {

template <class T>
using AccumulatorOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class Acc, class T>
inline Acc widen(T v) {
  if constexpr (std::is_same_v<T, bf16>)
    return Acc(bf16_to_f32(v));
  else if constexpr (std::is_same_v<T, f16>)
    return Acc(f16_to_f32(v));
  else
    return Acc(v);
}

template <class T, class Acc>
inline T narrow(Acc v) {
  if constexpr (std::is_same_v<T, bf16>) {
    if constexpr (std::is_same_v<Acc, double>)
      return f64_to_bf16(v);
    else
      return f32_to_bf16(v);
  } else if constexpr (std::is_same_v<T, f16>) {
    if constexpr (std::is_same_v<Acc, double>)
      return f64_to_f16(v);
    else
      return f32_to_f16(v);
  } else {
    return T(v);
  }
}

// The 16-bit storage floats: computed in float, rounded once to T.
template <class T>
inline constexpr bool is_half_type = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

template <class T>
inline constexpr bool is_floating_type = std::is_same_v<T, double> || std::is_same_v<T, float> ||
                                         std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

// Calls f(T{}) for the floating dtypes (through visit_dtype); refuses the others naming the dtype.
template <class F>
void visit_floating(DType t, F&& f) {
  visit_dtype(t, [&](auto zero) {
    if constexpr (is_floating_type<decltype(zero)>)
      f(zero);
    else
      fail("dtype {} is not floating; expected f64, f32, bf16 or f16", dtype_name(t));
  });
}

}  // namespace dew::ops
