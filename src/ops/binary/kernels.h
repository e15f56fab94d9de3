// The binary ops' loop, written once and compiled per instruction set (NOTE [kernel namespaces]).
#pragma once

#include "ops/binary/binary.h"
#include "ops/binary/pow.h"
#include "ops/binary/scalar.h"
#include "ops/elementwise.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// The functions that FloatVec computes as floats do (so map_elements takes their vector path): the
// arithmetic, and maximum and minimum by selects with binary_apply's NaN rule (a NaN a wins, then b's).
template <BinaryFn F>
inline constexpr bool binary_fn_has_float_vec_form =
    F == BinaryFn::add || F == BinaryFn::sub || F == BinaryFn::mul || F == BinaryFn::div ||
    F == BinaryFn::maximum || F == BinaryFn::minimum;
#if DEW_HAS_FLOAT_VEC
template <BinaryFn F>
[[gnu::always_inline]] inline FloatVec binary_vec(FloatVec a, FloatVec b) {
  if constexpr (F == BinaryFn::maximum)
    return select(a > b, a, select(a == a, b, a));
  else if constexpr (F == BinaryFn::minimum)
    return select(a < b, a, select(a == a, b, a));
  else
    return binary_apply<F>(a, b);
}

// y[i] = a[i] F b[i] (a comparison) for f16 rows, compared as floats on widened chunks (dtype.h's
// scalar conversion would set the row's time). Not asking ahead for the inputs: a loop this short keeps
// the hardware prefetchers ahead by itself.
template <BinaryFn F>
inline void compare_f16_chunks(const f16* a, const f16* b, bool* y, int64_t n) {
  for_each_widened_f16_chunk(std::array<const f16*, 2>{a, b}, n,
                             [&](int64_t c, int64_t len, const float(&in)[2][kMapChunk]) {
                               for (int64_t i = 0; i < len; ++i)
                                 y[c + i] = binary_apply<F>(in[0][i], in[1][i]);
                             });
}
#endif

template <class T>
void binary_rows(const BinaryArgs& args, Tensor& out) {
  using Acc = std::conditional_t<is_floating_type<T>, AccumulatorOf<T>, double>;
  with_binary_fn(args.fn, [&](auto fn) {
    using Fn = decltype(fn);  // a type: the lambda below uses it without capturing (F would need one)
    constexpr BinaryFn F = Fn::value;
    using Out = std::conditional_t<(F >= BinaryFn::eq), bool, T>;
    Out* y = out.data<Out>();
    for_each_row<2>(out.shape(), {args.a, args.b}, [&](const RowView<2>& v, int64_t o) {
      const T* a = static_cast<const T*>(v.in[0]);
      const T* b = static_cast<const T*>(v.in[1]);
      Out* yo = y + o;
      auto put = [&](int64_t i, Acc r) {
        if constexpr (std::is_same_v<Out, bool>)
          yo[i] = r != Acc(0);
        else
          yo[i] = narrow<T>(r);
      };
#if DEW_HAS_FLOAT_VEC
      if constexpr (F == BinaryFn::pow)  // NOTE [pow through double]
        if (v.stride[0] == 1 && (v.stride[1] == 1 || v.stride[1] == 0) && rows_on_float_vec<T>())
          return pow_row(a, b, v.stride[1], yo, v.length);
#endif
      if constexpr (is_floating_type<T> && !std::is_same_v<Out, bool>) {
        // Contiguous rows: map_elements, on FloatVec where the function has a form there.
        if (v.stride[0] == 1 && v.stride[1] == 1)
          return map_elements<T, MapWork::few_instructions>(
              std::array<const T*, 2>{a, b}, std::array<T*, 1>{yo}, v.length,
              []<class V>(V x, V z) __attribute__((always_inline)) requires(
                  std::is_same_v<V, Acc> || binary_fn_has_float_vec_form<Fn::value>) {
                if constexpr (std::is_same_v<V, Acc>) {
                  return binary_apply<Fn::value>(x, z);
                } else {
#if DEW_HAS_FLOAT_VEC  // (no binary_vec on the portable tier, whose V is only Acc: clang looks the name up)
                  return binary_vec<Fn::value>(x, z);
#endif
                }
              });
      }
#if DEW_HAS_FLOAT_VEC
      if constexpr (std::is_same_v<T, f16> && std::is_same_v<Out, bool>)
        if (v.stride[0] == 1 && v.stride[1] == 1 && rows_on_float_vec<T>())
          return compare_f16_chunks<F>(a, b, yo, v.length);
#endif
      if (v.stride[0] == 1 && v.stride[1] == 1)  // contiguous rows: plain loops the compiler vectorizes
        for (int64_t i = 0; i < v.length; ++i) put(i, binary_apply<F>(widen<Acc>(a[i]), widen<Acc>(b[i])));
      else if (v.stride[0] == 1 && v.stride[1] == 0)
        for (int64_t i = 0; i < v.length; ++i) put(i, binary_apply<F>(widen<Acc>(a[i]), widen<Acc>(b[0])));
      else
        for (int64_t i = 0; i < v.length; ++i)
          put(i, binary_apply<F>(widen<Acc>(a[i * v.stride[0]]), widen<Acc>(b[i * v.stride[1]])));
    });
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
