// The unary ops' loop, written once and compiled per instruction set (NOTE [kernel namespaces]).
// With VectorMath, exp, sigmoid, silu and tanh-GELU go through the exps, and tanh, log and erf-GELU through
// the float functions of vector_math.h, in the forms for the dtype results round to (exp_rounding_to,
// tanh_rounding_to, gelu_erf_rounding_to, ...), so every loop vectorizes; contiguous rows run through
// map_elements. (On bf16 the tiers take only the functions cpu.table does not, and cpu.avx512 the cheap ones
// it does: NOTE [unary maps by table], NOTE [cheap functions on AVX-512 vectors].)
#pragma once

#include <cstring>

#include "ops/elementwise.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/unary/scalar.h"
#include "ops/unary/unary.h"
#include "simd/isa.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// T: the dtype results round to, which picks the exp (exp_rounding_to).
template <UnaryFn F, bool VectorMath, class T, class Acc>
[[gnu::always_inline]] inline Acc unary_kernel_value(Acc x) {
  if constexpr (VectorMath && F == UnaryFn::exp)
    return exp_rounding_to<T>(x);
  else if constexpr (VectorMath && F == UnaryFn::sigmoid)
    return times_sigmoid_f32<T>(Acc(1), x);
  else if constexpr (VectorMath && F == UnaryFn::silu)
    return times_sigmoid_f32<T>(x, x);
  else if constexpr (VectorMath && F == UnaryFn::tanh)
    return tanh_rounding_to<T>(x);
  else if constexpr (VectorMath && F == UnaryFn::log)
    return log_rounding_to<T>(x);
  else if constexpr (VectorMath && F == UnaryFn::gelu)
    return gelu_erf_rounding_to<T>(x);
  else if constexpr (VectorMath && F == UnaryFn::gelu_tanh)  // 0.5 x (1 + tanh y) = x sigmoid(2y)
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
template <UnaryFn F, bool VectorMath>
inline constexpr bool unary_fn_has_float_vec_form = VectorMath &&
                                                    (F == UnaryFn::exp || F == UnaryFn::sigmoid ||
                                                     F == UnaryFn::silu || F == UnaryFn::gelu_tanh ||
                                                     F == UnaryFn::gelu || F == UnaryFn::log ||
                                                     F == UnaryFn::tanh || unary_fn_of_few_instructions<F>);

#if DEW_HAS_F32X16
// NOTE [maps by vectors and lookups at once]
// A function computed on vectors (erf-GELU by gelu_erf_rounding_to, say) keeps the vector pipes busy and
// leaves the integer pipes and most load ports idle; cpu.table's lookups (lookup4s: scalar loads, shifts
// and ors) use only those. So a contiguous row of unary_by_vectors_and_lookups's functions goes a step
// at a time, most values computed and the rest looked up in a table of this kernel's own results at
// every input (kernel_results_table): each input gets the same bits wherever it sits in a row, and on
// bf16, where those are cpu.table's correctly rounded bits (table_test.cc), the table is cpu.table's in
// effect. bf16 steps eighty values, sixty-four computed by even and odd and sixteen looked up; f16
// sixty-four, forty-eight computed (vcvtph2ps, not even and odd) and sixteen looked up: the proportions
// that ran fastest. The functions are those the mix speeds up (bf16 erf-GELU, tanh and tanh-GELU; f16
// erf-GELU); f16 tanh and tanh-GELU gain little and SiLU is near its memory's time. When a neighbour
// contends the core's integer and load side the lookups cost instead, but then the memory is slow too.
template <UnaryFn F, class T>
struct VectorsAndLookups {
  static constexpr int64_t kVector = std::is_same_v<T, bf16> ? 32 : 16;  // values a compute() takes
  static constexpr int64_t kComputed = std::is_same_v<T, bf16> ? 64 : 48, kStep = kComputed + 16;

  [[gnu::always_inline]] static F32x16 f(F32x16 v) { return unary_kernel_value<F, true, T>(v); }
  [[gnu::always_inline]] static void compute(const T* x, T* y) {
    if constexpr (std::is_same_v<T, bf16>) {
      const EvenOdd16 v = load_even_odd(x);
      if (!store_even_odd(y, f(v.even), f(v.odd)))  // a subnormal: store_vec narrows it
        store_vec(y, f(load_vec(x))), store_vec(y + 16, f(load_vec(x + 16)));
    } else {
      store_vec(y, f(load_vec(x)));
    }
  }
};

// This kernel's results at each of the 65,536 inputs of T, indexed by the input's bits: built on first
// use by compute() over every input, then constant.
template <UnaryFn F, class T>
const uint16_t* kernel_results_table() {
  using Step = VectorsAndLookups<F, T>;
  static const std::vector<T> table = [] {
    std::vector<T> x(65536), y(65536);
    for (size_t i = 0; i < x.size(); ++i) x[i].bits = uint16_t(i);
    for (size_t i = 0; i < x.size(); i += Step::kVector) Step::compute(x.data() + i, y.data() + i);
    return y;
  }();
  return reinterpret_cast<const uint16_t*>(table.data());
}

template <UnaryFn F, class T>
void row_by_vectors_and_lookups(const uint16_t* table, const T* x, T* y, int64_t n) {
  using Step = VectorsAndLookups<F, T>;
  const auto* xb = reinterpret_cast<const uint16_t*>(x);
  auto* yb = reinterpret_cast<uint16_t*>(y);
  int64_t i = 0;
  for (; i + Step::kStep <= n; i += Step::kStep) {
    prefetch_ahead<0>(x + i, Step::kStep), prefetch_ahead<1>(y + i, Step::kStep);  // NOTE [prefetching maps]
    lookup4s(table, xb + i + Step::kComputed, yb + i + Step::kComputed, Step::kStep - Step::kComputed);
    for (int64_t k = 0; k < Step::kComputed; k += Step::kVector) Step::compute(x + i + k, y + i + k);
  }
  for (; i < n; ++i) yb[i] = table[xb[i]];
}
#endif

template <bool VectorMath, class T>
void unary_rows(const UnaryArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  T* y = out.data<T>();
  with_unary_fn(a.fn, [&](auto fn) {
    using Fn = decltype(fn);  // a type: lambdas below use it without capturing (F would need one)
    constexpr UnaryFn F = Fn::value;
#if DEW_HAS_F32X16
    constexpr bool kLooksUp =
        VectorMath && is_half_type<T> &&
        unary_by_vectors_and_lookups(F, std::is_same_v<T, bf16> ? DType::bf16 : DType::f16);
    const uint16_t* table = nullptr;
    if constexpr (kLooksUp) table = kernel_results_table<F, T>();
#endif
    for_each_row<1>(out.shape(), {a.x}, [&](const RowView<1>& v, int64_t o) {
      const T* x = static_cast<const T*>(v.in[0]);
      T* yo = y + o;
#if DEW_HAS_F32X16
      if constexpr (kLooksUp) {
        if (v.stride[0] == 1) return row_by_vectors_and_lookups<F>(table, x, yo, v.length);
      }
#endif
      if (v.stride[0] == 1)
        map_elements<T, unary_fn_of_few_instructions<F> ? MapWork::few_instructions : MapWork::computes>(
            std::array<const T*, 1>{x}, std::array<T*, 1>{yo}, v.length,
            []<class V>(V xi) __attribute__((always_inline)) requires(
                std::is_same_v<V, Acc> || unary_fn_has_float_vec_form<Fn::value, VectorMath>) {
              return unary_kernel_value<Fn::value, VectorMath, T>(xi);
            });
      else
        for (int64_t i = 0; i < v.length; ++i)
          yo[i] = narrow<T>(unary_kernel_value<F, VectorMath, T>(widen<Acc>(x[i * v.stride[0]])));
    });
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
