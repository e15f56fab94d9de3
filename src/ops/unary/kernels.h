// The unary ops' loop, written once and compiled per instruction set (NOTE [kernel namespaces]).
// With Fast, exp, sigmoid, silu and tanh-GELU go through the exps, and tanh, log and erf-GELU through the
// float functions of vector_math.h, in the forms for the dtype results round to (exp_rounding_to,
// tanh_rounding_to, gelu_erf_rounding_to, ...), so every loop vectorizes; contiguous rows run through
// map_elements. (On bf16 the tiers take only the functions cpu.table does not, and cpu.avx512 the cheap ones
// it does: NOTE [unary maps by table], NOTE [cheap functions on AVX-512 vectors].)
#pragma once

#include <cstring>

#include "ops/elementwise.h"
#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/unary/scalar.h"
#include "ops/unary/unary.h"
#include "ops/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// T: the dtype results round to, which picks the exp (exp_rounding_to).
template <UnaryFn F, bool Fast, class T, class Acc>
[[gnu::always_inline]] inline Acc unary_kernel_value(Acc x) {
  if constexpr (Fast && F == UnaryFn::exp)
    return exp_rounding_to<T>(x);
  else if constexpr (Fast && F == UnaryFn::sigmoid)
    return times_sigmoid_f32<T>(Acc(1), x);
  else if constexpr (Fast && F == UnaryFn::silu)
    return times_sigmoid_f32<T>(x, x);
  else if constexpr (Fast && F == UnaryFn::tanh)
    return tanh_rounding_to<T>(x);
  else if constexpr (Fast && F == UnaryFn::log)
    return log_rounding_to<T>(x);
  else if constexpr (Fast && F == UnaryFn::gelu)
    return gelu_erf_rounding_to<T>(x);
  else if constexpr (Fast && F == UnaryFn::gelu_tanh)  // 0.5 x (1 + tanh y) = x sigmoid(2y)
    return gelu_tanh_rounding_to<T>(x);
  else if constexpr (F == UnaryFn::abs && !std::is_floating_point_v<Acc>)  // FloatVec
    return magnitude(x);
  else if constexpr (F == UnaryFn::relu && !std::is_floating_point_v<Acc>)  // NaN kept, -0 to +0
    return select(x > Acc(0.0f), x, select(x == x, Acc(0.0f), x));
  else
    return unary_apply<F>(x);
}

// The functions unary_kernel_value writes over F (NOTE [one body for scalar and vector float functions]).
// neg, abs, square and relu are a few instructions, narrowed in registers on bf16 (MapWork).
template <UnaryFn F>
inline constexpr bool unary_fn_of_few_instructions =
    F == UnaryFn::neg || F == UnaryFn::abs || F == UnaryFn::square || F == UnaryFn::relu;
template <UnaryFn F, bool Fast>
inline constexpr bool unary_fn_has_float_vec_form = Fast &&
                                                    (F == UnaryFn::exp || F == UnaryFn::sigmoid ||
                                                     F == UnaryFn::silu || F == UnaryFn::gelu_tanh ||
                                                     F == UnaryFn::gelu || F == UnaryFn::log ||
                                                     F == UnaryFn::tanh || unary_fn_of_few_instructions<F>);

#if DEW_HAS_F32X16
// NOTE [bf16 maps by vectors and lookups at once]
// A bf16 function computed on vectors (erf-GELU by gelu_erf_rounding_to, say) keeps the vector pipes busy
// and leaves the integer pipes and most load ports idle; cpu.table's lookups (lookup4s: scalar loads,
// shifts and ors) use only those, and where the computed results are the table's bits at every input
// (unary_bf16_by_vectors_and_lookups) a row may take either for any value. So a contiguous row goes
// eighty values a step, sixty-four computed by even and odd and sixteen looked up. erf-GELU, a
// 65,536-value row in L1 on one core: computed alone 12.6-12.9 us, by the gathers 14.3-14.9, so 10.3
// (32 + 8 the same, 32 + 16 11.3-11.8, 32 + 32 13.4-14.3); on the bench's 12,582,912 values, two threads,
// 1.33 -> 1.04-1.10 ms, tanh 0.95 -> 0.88-0.93, tanh-GELU 1.00 -> 0.89-0.92 (minimums), SiLU, near its
// memory's time, unchanged and left out. In minutes when a neighbour contends the core's integer and load
// side (the gathers at 25 us, not 15) the lookups cost instead: 15.4-15.8 us computed alone, 18.8-19.6
// so; those minutes' triad is low and the row passes either way, where in fast-memory minutes only this
// form reached 60% of a 63-69 GB/s triad (docs/perf.md, twenty-fifth session; dev/erf_gelu_bf16).
template <UnaryFn F,
          class T>  // bf16 (a template so that other dtypes' discarded calls are never instantiated)
void bf16_row_by_vectors_and_lookups(const uint16_t* table, const T* x, T* y, int64_t n) {
  static_assert(std::is_same_v<T, bf16>);
  constexpr int64_t kComputed = 64, kStep = kComputed + 16;
  const auto* xb = reinterpret_cast<const uint16_t*>(x);
  auto* yb = reinterpret_cast<uint16_t*>(y);
  const auto f = [](F32x16 v) __attribute__((always_inline)) {
    return unary_kernel_value<F, true, bf16>(v);
  };
  const auto compute32 = [&](int64_t i) __attribute__((always_inline)) {
    const EvenOdd16 v = load_even_odd(x + i);
    if (!store_even_odd(y + i, f(v.even), f(v.odd)))  // a subnormal: store_vec narrows it
      store_vec(y + i, f(load_vec(x + i))), store_vec(y + i + 16, f(load_vec(x + i + 16)));
  };
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    prefetch_ahead<0>(x + i, kStep), prefetch_ahead<1>(y + i, kStep);  // NOTE [prefetching maps]
    lookup4s(table, xb + i + kComputed, yb + i + kComputed, kStep - kComputed);
    compute32(i), compute32(i + 32);
  }
  for (; i + 32 <= n; i += 32) compute32(i);
  for (; i < n; ++i) yb[i] = table[xb[i]];
}
#endif

template <bool Fast, class T>
void unary_rows(const UnaryArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  T* y = out.data<T>();
  with_unary_fn(a.fn, [&](auto fn) {
    using Fn = decltype(fn);  // a type: lambdas below use it without capturing (F would need one)
    constexpr UnaryFn F = Fn::value;
#if DEW_HAS_F32X16
    constexpr bool kLooksUp = Fast && unary_bf16_by_vectors_and_lookups(F) && std::is_same_v<T, bf16>;
    const uint16_t* table = kLooksUp ? unary_table_bits(F, DType::bf16) : nullptr;
#endif
    for_each_row<1>(out.shape(), {a.x}, [&](const RowView<1>& v, int64_t o) {
      const T* x = static_cast<const T*>(v.in[0]);
      T* yo = y + o;
#if DEW_HAS_F32X16
      if constexpr (kLooksUp) {
        if (v.stride[0] == 1) return bf16_row_by_vectors_and_lookups<F>(table, x, yo, v.length);
      }
#endif
      if (v.stride[0] == 1)
        map_elements<T, unary_fn_of_few_instructions<F> ? MapWork::few_instructions : MapWork::computes>(
            std::array<const T*, 1>{x}, std::array<T*, 1>{yo}, v.length,
            []<class V>(V xi) __attribute__((always_inline)) requires(
                std::is_same_v<V, Acc> || unary_fn_has_float_vec_form<Fn::value, Fast>) {
              return unary_kernel_value<Fn::value, Fast, T>(xi);
            });
      else
        for (int64_t i = 0; i < v.length; ++i)
          yo[i] = narrow<T>(unary_kernel_value<F, Fast, T>(widen<Acc>(x[i * v.stride[0]])));
    });
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
