// The unary ops' loop, written once and compiled per instruction set (NOTE [kernel namespaces]).
// With Fast, exp, sigmoid, silu and tanh-GELU go through the exps, and tanh, log and erf-GELU through the
// float functions of vector_math.h, in the forms for the dtype results round to (exp_rounding_to,
// tanh_rounding_to, gelu_erf_rounding_to, ...), so every loop vectorizes; contiguous rows run through
// map_elements. (On bf16 the tiers take only the functions cpu.table does not, and cpu.avx512 the cheap ones
// it does: NOTE [unary maps by table], NOTE [cheap functions on AVX-512 vectors].)
#pragma once

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

template <bool Fast, class T>
void unary_rows(const UnaryArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  T* y = out.data<T>();
  with_unary_fn(a.fn, [&](auto fn) {
    using Fn = decltype(fn);  // a type: lambdas below use it without capturing (F would need one)
    constexpr UnaryFn F = Fn::value;
    for_each_row<1>(out.shape(), {a.x}, [&](const RowView<1>& v, int64_t o) {
      const T* x = static_cast<const T*>(v.in[0]);
      T* yo = y + o;
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
