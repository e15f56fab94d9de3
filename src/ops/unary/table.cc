// Unary ops on bf16 and f16 by table (cpu.table): the function's value at each of the 65,536 inputs a
// 16-bit float holds, computed in double and rounded once, so every result is correctly rounded and
// the same on every CPU. Only the functions whose arithmetic costs more than a lookup (NOTE [unary
// maps by table]) on bf16, and every function on f16, which the tiers do not take; f32 and f64 have too
// many inputs for a table.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#define DEW_KERNEL_NS portable
#include "ops/elementwise.h"
#include "ops/map_elements.h"
#include "ops/unary/scalar.h"
#include "ops/unary/unary.h"
#include "select/requirements.h"

namespace dew::ops {
namespace {

// NOTE [unary maps by table]
// A bf16 or f16 input has 65,536 values, so a unary function of one is a table of the double function
// rounded once: correctly rounded, the same bits on every CPU, and one load an element whatever the
// function. Where a function's float arithmetic costs more than the memory it streams (erf-GELU, say),
// the table makes the map run at its memory's time. Two loops read the tables: cpu.avx512.table sixteen
// entries a gather, cpu.table, for every other CPU, one scalar load an element, four to a 64-bit load and
// store (AVX2's gathers are slow on some CPUs). A table is 128 KB; activations touch a few KB of it (a few
// dozen exponents), which stay in L1. Tables are built on first use (65,536 double evaluations) and never
// change: constants that cost nothing until a program asks for them.
using Table = std::array<uint16_t, 65536 + 1>;  // one entry past the last, which gathers of 32 bits read

// The value each entry holds. The reference's forms are exact in double except the GELUs' 1 + erf(z)
// and 1 + tanh(u), which cancel in the negative tail (0 past x = -5.7 for erf-GELU, where bf16 still
// holds results down to x = -13): those are written there as erfc(-z) and 2 sigmoid(2u).
template <UnaryFn F>
double table_value(double x) {
  if constexpr (F == UnaryFn::gelu)
    return 0.5 * x * std::erfc(-x * 0.70710678118654752440);
  else if constexpr (F == UnaryFn::gelu_tanh)
    return times_sigmoid(x, 2.0 * gelu_tanh_argument(x));
  else
    return unary_apply<F>(x);
}

template <UnaryFn F, class T>
const Table& table() {
  static const Table t = [] {
    Table out{};
    for (uint32_t b = 0; b < 65536; ++b)
      out[b] = Scalar<T>::from_f64(table_value<F>(Scalar<T>::to_f64(T{uint16_t(b)}))).bits;
    return out;
  }();
  return t;
}

// f' for the GLUs' activations, in forms that do not cancel in the negative tail (those of
// act_and_derivative, glu/kernels.h): silu' = s (1 + x s(-x)), erf-GELU' = Phi(x) + x phi(x) with Phi
// from erfc, tanh-GELU' = s(2u) + 2 x s(2u) s(-2u) u'.
template <UnaryFn F>
double table_derivative(double x) {
  if constexpr (F == UnaryFn::silu) {
    return times_sigmoid(1.0, x) * (1.0 + x * times_sigmoid(1.0, -x));
  } else if constexpr (F == UnaryFn::gelu) {
    return 0.5 * std::erfc(-x * 0.70710678118654752440) + x * 0.39894228040143267794 * std::exp(-0.5 * x * x);
  } else {
    static_assert(F == UnaryFn::gelu_tanh);
    const double u2 = 2.0 * gelu_tanh_argument(x), s = times_sigmoid(1.0, u2);
    return s + 2.0 * x * s * times_sigmoid(1.0, -u2) * gelu_tanh_argument_derivative(x);
  }
}

// The float nearest value(x) at each x of T (bf16 or f16), for kernels that multiply it before rounding
// to T (the GLUs' act(gate) * up): 256 KB.
template <UnaryFn F, class T>
const std::array<float, 65536>& float_table() {
  static const std::array<float, 65536> t = [] {
    std::array<float, 65536> out;
    for (uint32_t b = 0; b < out.size(); ++b) out[b] = float(table_value<F>(widen<double>(T{uint16_t(b)})));
    return out;
  }();
  return t;
}

// The floats nearest value(x) and value'(x), side by side, at each x of T: 512 KB. The GLUs' backward
// needs both of every gate, so one 8-byte entry serves it: one cache line and half the gathered
// elements of two tables.
template <UnaryFn F, class T>
const std::array<float, 2 * 65536>& float_pair_table() {
  static const std::array<float, 2 * 65536> t = [] {
    std::array<float, 2 * 65536> out;
    for (uint32_t b = 0; b < 65536; ++b) {
      const double x = widen<double>(T{uint16_t(b)});
      out[2 * b] = float(table_value<F>(x));
      out[2 * b + 1] = float(table_derivative<F>(x));
    }
    return out;
  }();
  return t;
}

constexpr int64_t kLine = 32;  // 16-bit values in a 64-byte cache line

// y = t[x] over the rows; contiguous rows four values a 64-bit load and store (half the memory
// instructions of one at a time), asking a line
// ahead each 32 values (NOTE [prefetching maps]).
template <class T>
void map_by_table(const uint16_t* t, const UnaryArgs& a, Tensor& out) {
  T* y = out.data<T>();
  for_each_row<1>(out.shape(), {a.x}, [&](const RowView<1>& v, int64_t o) {
    const T* x = static_cast<const T*>(v.in[0]);
    T* yo = y + o;
    const int64_t s = v.stride[0], n = v.length;
    if (s != 1) {
      for (int64_t i = 0; i < n; ++i) yo[i] = T{t[x[i * s].bits]};
      return;
    }
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      if (i % kLine == 0)
        portable::prefetch_ahead<0>(x + i, kLine), portable::prefetch_ahead<1>(yo + i, kLine);
      lookup4s(t, x + i, yo + i, 4);
    }
    for (; i < n; ++i) yo[i] = T{t[x[i].bits]};
  });
}

}  // namespace

bool unary_by_table(UnaryFn f, DType dtype) {
  // On bf16 and f16 every function that computes: sign and bit moves (neg, abs, relu) and square cost
  // the tiers no more than their memory.
  return (dtype == DType::bf16 || dtype == DType::f16) && f != UnaryFn::neg && f != UnaryFn::abs &&
         f != UnaryFn::square && f != UnaryFn::relu;
}

// NOTE [cheap functions on AVX-512 vectors]
// exp, sqrt, rsqrt, sigmoid and silu cost an AVX-512 vector a dozen operations or a square root, and on
// AMD's cores that is less than a gather of sixteen table entries (on Intel's, whose gathers are twice
// as fast, the two are near, both above the memory's time). tanh, tanh-GELU and log take 30-45
// operations in their f32 forms, more than a gather, but 17-20 in forms for results that round to bf16
// or f16 (tanh_rounding_to, gelu_tanh_rounding_to, log_rounding_to), which are ahead of it. So
// cpu.avx512 computes these eight and erf-GELU (NOTE [erf-GELU for bf16 and f16 results]: on bf16 the
// table's bits) on f16 and, where the CPU narrows bf16 natively (rows_on_float_vec), on bf16.
bool unary_computed_on_avx512(UnaryFn f, DType dtype) {
  const bool native_bf16 = dtype == DType::bf16 && cpu_features().avx512bf16;
  const bool cheap = f == UnaryFn::exp || f == UnaryFn::sqrt || f == UnaryFn::rsqrt || f == UnaryFn::tanh ||
                     f == UnaryFn::gelu_tanh || f == UnaryFn::log || f == UnaryFn::sigmoid ||
                     f == UnaryFn::silu || f == UnaryFn::gelu;
  return cheap && (dtype == DType::f16 || native_bf16);
}

const uint16_t* unary_table_bits(UnaryFn f, DType dtype) {
  const uint16_t* bits = nullptr;
  with_unary_fn(f, [&](auto fn) {
    constexpr UnaryFn F = decltype(fn)::value;
    bits = dtype == DType::bf16 ? table<F, bf16>().data() : table<F, f16>().data();
  });
  return bits;
}

const float* function_values(UnaryFn f, DType dtype) {
  const float* values = nullptr;
  with_unary_fn(f, [&](auto fn) {
    constexpr UnaryFn F = decltype(fn)::value;
    values = dtype == DType::bf16 ? float_table<F, bf16>().data() : float_table<F, f16>().data();
  });
  return values;
}

const float* activation_value_derivative_pairs(UnaryFn f, DType dtype) {
  const auto of = [dtype]<UnaryFn F>() {
    return dtype == DType::bf16 ? float_pair_table<F, bf16>().data() : float_pair_table<F, f16>().data();
  };
  switch (f) {
    case UnaryFn::silu:
      return of.operator()<UnaryFn::silu>();
    case UnaryFn::gelu:
      return of.operator()<UnaryFn::gelu>();
    case UnaryFn::gelu_tanh:
      return of.operator()<UnaryFn::gelu_tanh>();
    default:
      fail("[glu] no derivative table for {}; expected silu, gelu or gelu_tanh", unary_name(f));
  }
}

select::Requirement<UnaryArgs> unary_table_requirement() {
  return select::requires_that<UnaryArgs>(
      "bf16 or f16 with fn not in {neg, abs, square, relu}",
      [](const UnaryArgs& a) { return unary_by_table(a.fn, a.dtype()); },
      [](const UnaryArgs& a) {
        return fmt::format("fn is {} on {}", unary_name(a.fn), dtype_name(a.dtype()));
      });
}

void add_unary_table(select::Registry<UnaryArgs>& r) {
  r.add({"cpu.table",
         {select::on_cpu<UnaryArgs>(), select::dtype_in<UnaryArgs>({DType::bf16, DType::f16}),
          unary_table_requirement()},
         [](const UnaryArgs& a, std::vector<Tensor>& outs) {
           const uint16_t* t = unary_table_bits(a.fn, a.dtype());
           if (a.dtype() == DType::bf16)
             map_by_table<bf16>(t, a, outs[0]);
           else
             map_by_table<f16>(t, a, outs[0]);
         }});
}

}  // namespace dew::ops
