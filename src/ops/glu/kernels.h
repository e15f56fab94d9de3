// The gated units' kernels, written once and compiled per instruction set (NOTE [kernel
// namespaces]); the activation is a compile-time constant so each loop is straight-line code.
#pragma once

#include "ops/activation.h"
#include "ops/glu/glu.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/rows.h"
#include "ops/unary/unary.h"
#include "simd/isa.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// With VectorMath, SiLU and tanh-GELU go through exp_f32 so the loops vectorize; tanh-GELU is rewritten
// with sigmoids (0.5 (1 + tanh y) = sigmoid(2y)), which need no tanh. (On bf16 and f16 the tiers take
// act and act' from tables instead: NOTE [bf16 gates by table].)
template <Activation A, bool VectorMath, class Acc>
[[gnu::always_inline]] inline Acc act(Acc x) {
  if constexpr (VectorMath && A == Activation::silu) {
    return times_sigmoid_f32(x, x);
  } else if constexpr (VectorMath && A == Activation::gelu_erf) {
    return gelu_erf_f32(x);                                         // NOTE [erf-GELU in float]
  } else if constexpr (VectorMath && A == Activation::gelu_tanh) {  // 0.5 x (1 + tanh y) = x sigmoid(2y)
    return times_sigmoid_f32(x, Acc(2) * gelu_tanh_argument(x));
  } else {
    return apply_activation(A, x);
  }
}

// act(x) and act'(x) together, for the backward (d_up needs act, d_gate act'). With VectorMath, SiLU and
// tanh-GELU take both from one exp and one division: sigmoid(z) and sigmoid(-z) of z = x or z = 2y
// (sigmoid_pair_f32), so that 1 - sigmoid(z) never cancels and act needs no division of its own.
template <Activation A, bool VectorMath, class Acc>
[[gnu::always_inline]] inline std::array<Acc, 2> act_and_derivative(Acc x) {
  if constexpr (VectorMath && A == Activation::silu) {  // silu' = s (1 + x (1 - s))
    const SigmoidPair<Acc> p = sigmoid_pair_f32(x);
    return {x * p.s, p.s * (Acc(1) + x * p.s_neg)};
  } else if constexpr (VectorMath && A == Activation::gelu_erf) {
    return {gelu_erf_f32(x), gelu_erf_derivative_f32(x)};  // one erf: inlined, shared
  } else if constexpr (VectorMath && A == Activation::gelu_tanh) {
    // (1 + t)/2 = sigmoid(2y) and 1 - t^2 = 4 sigmoid(2y) sigmoid(-2y): no cancellation near t = +-1;
    // x sigmoid(-2y) first, which is 0 where 2 x would overflow.
    const SigmoidPair<Acc> p = sigmoid_pair_f32(Acc(2) * gelu_tanh_argument(x));
    return {x * p.s, p.s + (x * p.s_neg) * (Acc(2) * p.s) * gelu_tanh_argument_derivative(x)};
  } else {
    return {apply_activation(A, x), activation_derivative(A, x)};
  }
}

// NOTE [half gates computed on AVX-512]
// vector_math.h has forms of the activations for results that round to bf16 or f16 (times_sigmoid_f32<T>,
// gelu_erf_rounding_to, gelu_tanh_rounding_to: within a few float ulps, the forms cpu.avx512's unary maps
// compute), 13-30 vector operations where the f32 forms take 20-35. On AVX-512 (with BF16 for bf16) the
// forward computes act(gate) so, one rounding of the float product act * up to T: faster than gathering
// act from a table (NOTE [bf16 gates by table]), and steadier when a neighbour loads the core's integer
// and load side, which slows gathers far more than vector arithmetic. The bf16 backward computes act and
// act' so too (act_and_derivative_rounding_to). f16 keeps the pairs: a float act' misses its rounding near
// act''s zeros (x = -0.75 for erf-GELU: Phi(x) + x phi(x) cancels), which f16's finer steps show (the
// every-gate test), and f16 SiLU its f32 arithmetic (NOTE [bf16 gates by table]). AVX2 keeps the tables.

// act for products that round to T (bf16 or f16).
template <Activation A, class T, class F>
[[gnu::always_inline]] inline F act_rounding_to(F x) {
  if constexpr (A == Activation::silu)
    return times_sigmoid_f32<T>(x, x);
  else if constexpr (A == Activation::gelu_erf)
    return gelu_erf_rounding_to<T>(x);
  else
    return gelu_tanh_rounding_to<T>(x);
}
// act and act' for products that round to T, as act_and_derivative's forms with the exps and the normal
// cdf for results that round to T.
template <Activation A, class T, class F>
[[gnu::always_inline]] inline std::array<F, 2> act_and_derivative_rounding_to(F x) {
  if constexpr (A == Activation::silu) {
    const SigmoidPair<F> p = sigmoid_pair_f32<T>(x);
    return {x * p.s, p.s * (F(1.0f) + x * p.s_neg)};
  } else if constexpr (A == Activation::gelu_erf) {
    const NormalCdf<F> p = normal_cdf_rounding_to<T>(x);
    return {x * p.cdf, mul_add(x * F(0.39894228040143267794f), p.gaussian, p.cdf)};
  } else {
    const SigmoidPair<F> p = sigmoid_pair_f32<T>(F(2.0f) * gelu_tanh_argument(x));
    return {x * p.s, p.s + (x * p.s_neg) * (F(2.0f) * p.s) * gelu_tanh_argument_derivative(x)};
  }
}

// The activations act and act_and_derivative write over F (NOTE [one body for scalar and vector float
// functions]).
template <Activation A, bool VectorMath>
inline constexpr bool activation_has_float_vec_form = VectorMath &&
                                                      (A == Activation::silu || A == Activation::gelu_tanh ||
                                                       A == Activation::gelu_erf);

// NOTE [bf16 gates by table]
// A bf16 (or f16) gate has 65,536 values, so act(gate) comes from a table of floats (function_values, the
// double function rounded once) and only the product with up is arithmetic: out = bf16(act * up), one
// rounding of a float product as before, from a correctly rounded act instead of one a few ulps off.
// On AVX2, whose gathers are slow on some CPUs, scalar loads fill a chunk in L1 and a vector loop
// multiplies and narrows it (AVX-512 computes the forward instead: NOTE [half gates computed on
// AVX-512]). Either way the forward runs at its memory's time, where the f32 arithmetic does not. The
// backward takes act and act' from one table of pairs (activation_value_derivative_pairs): one gather
// where two tables take two. f16 gates the same, but SiLU's backward: its arithmetic narrows f16 in
// registers (vcvtps2ph), faster than the tables on AVX2.
template <class T>
void glu_forward_by_table(const float* act_table, const T* g, const T* u, T* out, int64_t n) {
  alignas(64) float chunk[kMapChunk];
  for (int64_t c = 0; c < n; c += kMapChunk) {
    const int64_t len = std::min(kMapChunk, n - c);
    prefetch_map(std::array<const T*, 2>{g, u}, std::array<T*, 1>{out}, c, len);  // NOTE [prefetching maps]
    for (int64_t i = 0; i < len; ++i) chunk[i] = act_table[g[c + i].bits];
#if DEW_HAS_FLOAT_VEC
    if (rows_on_float_vec<T>()) {
      for (int64_t i = 0; i < len; i += kVecWidth) {
        const int lanes = int(std::min<int64_t>(kVecWidth, len - i));
        store_vec(out + c + i, load_vec(chunk + i, lanes) * load_vec(u + c + i, lanes), lanes);
      }
      continue;
    }
#endif
    for (int64_t i = 0; i < len; ++i) out[c + i] = narrow<T>(chunk[i] * widen<float>(u[c + i]));
  }
}

// act(g[i]) and act'(g[i]) for i in [0, n) by scalar loads from the table of pairs.
template <class T>
inline void split_pairs(const float* pairs, const T* g, float* act, float* derivative, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float* pair = pairs + 2 * int64_t(g[i].bits);
    act[i] = pair[0], derivative[i] = pair[1];
  }
}

// The backward the same way: d_gate = bf16(dy up act'(gate)), d_up = bf16(dy act(gate)), the products
// in the order act_and_derivative's loop takes them, act and act' from their table of pairs.
template <class T>
void glu_backward_by_table(const float* pairs, const T* g, const T* u, const T* dy, T* d_gate, T* d_up,
                           int64_t n) {
#if DEW_HAS_F32X16
  if (rows_on_float_vec<T>()) {
    int64_t i = 0;
    for (; i + 2 * kVecWidth <= n; i += 2 * kVecWidth) {  // as the forward: one vector gathered, one not
      prefetch_map(std::array<const T*, 3>{g, u, dy}, std::array<T*, 2>{d_gate, d_up}, i, 2 * kVecWidth);
      alignas(64) float values[kVecWidth], derivatives[kVecWidth];
      split_pairs(pairs, g + i + kVecWidth, values, derivatives, kVecWidth);
      const FloatVec di = load_vec(dy + i), ui = load_vec(u + i);
      const auto [value, derivative] = gather_pair_vec(pairs, g + i);
      store_vec(d_gate + i, di * ui * derivative);
      store_vec(d_up + i, di * value);
      const FloatVec dj = load_vec(dy + i + kVecWidth), uj = load_vec(u + i + kVecWidth);
      store_vec(d_gate + i + kVecWidth, dj * uj * load_vec(derivatives));
      store_vec(d_up + i + kVecWidth, dj * load_vec(values));
    }
    for (; i < n; i += kVecWidth) {
      const int lanes = int(std::min<int64_t>(kVecWidth, n - i));
      if (lanes == kVecWidth)  // NOTE [prefetching maps]
        prefetch_map(std::array<const T*, 3>{g, u, dy}, std::array<T*, 2>{d_gate, d_up}, i, kVecWidth);
      const FloatVec di = load_vec(dy + i, lanes), ui = load_vec(u + i, lanes);
      const auto [value, derivative] = gather_pair_vec(pairs, g + i, lanes);
      store_vec(d_gate + i, di * ui * derivative, lanes);
      store_vec(d_up + i, di * value, lanes);
    }
    return;
  }
#endif
  alignas(64) float act[kMapChunk], derivative[kMapChunk];
  for (int64_t c = 0; c < n; c += kMapChunk) {
    const int64_t len = std::min(kMapChunk, n - c);
    prefetch_map(std::array<const T*, 3>{g, u, dy}, std::array<T*, 2>{d_gate, d_up}, c, len);
    split_pairs(pairs, g + c, act, derivative, len);
#if DEW_HAS_FLOAT_VEC
    if (rows_on_float_vec<T>()) {
      for (int64_t i = 0; i < len; i += kVecWidth) {
        const int lanes = int(std::min<int64_t>(kVecWidth, len - i));
        const FloatVec di = load_vec(dy + c + i, lanes), ui = load_vec(u + c + i, lanes);
        store_vec(d_gate + c + i, di * ui * load_vec(derivative + i, lanes), lanes);
        store_vec(d_up + c + i, di * load_vec(act + i, lanes), lanes);
      }
      continue;
    }
#endif
    for (int64_t i = 0; i < len; ++i) {
      const float di = widen<float>(dy[c + i]);
      d_gate[c + i] = narrow<T>(di * widen<float>(u[c + i]) * derivative[i]);
      d_up[c + i] = narrow<T>(di * act[i]);
    }
  }
}

// Where glu reads gate and up: rows `width` long, `stride` apart (NOTE [rows read in place], ops/rows.h),
// or every element as one run.
struct GateRuns {
  int64_t width, stride;
};

// body(in, out, n) over the numel elements in parallel, a run at a time within one row: the inputs'
// elements from `in`, the (contiguous) outputs' from `out`.
template <class Body>
void over_gate_runs(int64_t numel, GateRuns r, const Body& body) {
  parallel_for(numel, 16384, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1;) {
      const int64_t row = i / r.width, column = i % r.width, n = std::min(i1 - i, r.width - column);
      body(row * r.stride + column, i, n);
      i += n;
    }
  });
}

template <Activation A, bool VectorMath, class T>
void glu_loop(const GluArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const bool contiguous = a.gate.is_contiguous() && a.up.is_contiguous();
  const int64_t stride = a.backward || contiguous ? 0 : row_stride(a.gate);
  const bool in_place = stride > 0 && row_stride(a.up) == stride;  // NOTE [rows read in place]
  const GateRuns runs{in_place ? a.gate.size(-1) : std::max<int64_t>(1, a.gate.numel()),
                      in_place ? stride : std::max<int64_t>(1, a.gate.numel())};
  Tensor gc = in_place ? a.gate : a.gate.contiguous(), uc = in_place ? a.up : a.up.contiguous(),
         dc = a.backward ? a.dy.contiguous() : Tensor();
  const T* g = gc.data<T>();
  const T* u = uc.data<T>();
  const T* dy = a.backward ? dc.data<T>() : nullptr;
  T* o0 = outs[0].data<T>();
  T* o1 = a.backward ? outs[1].data<T>() : nullptr;
  if constexpr (VectorMath && is_half_type<T>) {  // NOTE [bf16 gates by table]
    if (!(a.backward && A == Activation::silu && std::is_same_v<T, f16>)) {
#if DEW_HAS_F32X16
      if (!a.backward && rows_on_float_vec<T>()) {  // NOTE [half gates computed on AVX-512]
        over_gate_runs(a.gate.numel(), runs, [&](int64_t i0, int64_t o, int64_t n) {
          map_elements<T>(
              std::array<const T*, 2>{g + i0, u + i0}, std::array<T*, 1>{o0 + o}, n,
              []<class V>(V gi, V ui)
                  __attribute__((always_inline)) { return act_rounding_to<A, T>(gi) * ui; });
        });
        return;
      }
#endif
      if (!a.backward) {
        const float* act_table = function_values(unary_of(A), Scalar<T>::dtype);
        over_gate_runs(a.gate.numel(), runs, [&](int64_t i0, int64_t o, int64_t n) {
          glu_forward_by_table(act_table, g + i0, u + i0, o0 + o, n);
        });
        return;
      }
#if DEW_HAS_F32X16
      if (std::is_same_v<T, bf16> && rows_on_float_vec<T>()) {  // NOTE [half gates computed on AVX-512]
        over_gate_runs(a.gate.numel(), runs, [&](int64_t i0, int64_t o, int64_t n) {
          map_elements<T>(
              std::array<const T*, 3>{g + i0, u + i0, dy + i0}, std::array<T*, 2>{o0 + o, o1 + o}, n,
              []<class V>(V gi, V ui, V di) __attribute__((always_inline)) {
                const auto [value, derivative] = act_and_derivative_rounding_to<A, T>(gi);
                return std::array<V, 2>{di * ui * derivative, di * value};
              });
        });
        return;
      }
#endif
      const float* pairs = activation_value_derivative_pairs(unary_of(A), Scalar<T>::dtype);
      over_gate_runs(a.gate.numel(), runs, [&](int64_t i0, int64_t o, int64_t n) {
        glu_backward_by_table(pairs, g + i0, u + i0, dy + i0, o0 + o, o1 + o, n);
      });
      return;
    }
  }
  // The arithmetic: f32, and the GLUs the tables do not serve.
  over_gate_runs(a.gate.numel(), runs, [&](int64_t i0, int64_t o, int64_t n) {
    if (!a.backward) {
      map_elements<T>(
          std::array<const T*, 2>{g + i0, u + i0}, std::array<T*, 1>{o0 + o}, n,
          []<class V>(V gi, V ui) __attribute__((always_inline)) requires(
              std::is_same_v<V, Acc> || activation_has_float_vec_form<A, VectorMath>) {
            return act<A, VectorMath>(gi) * ui;
          });
      return;
    }
    map_elements<T>(
        std::array<const T*, 3>{g + i0, u + i0, dy + i0}, std::array<T*, 2>{o0 + o, o1 + o}, n,
        []<class V>(V gi, V ui, V di) __attribute__((always_inline)) requires(
            std::is_same_v<V, Acc> || activation_has_float_vec_form<A, VectorMath>) {
          // d_gate = dy * up * act'(gate); d_up = dy * act(gate)
          const auto [value, derivative] = act_and_derivative<A, VectorMath>(gi);
          return std::array<V, 2>{di * ui * derivative, di * value};
        });
  });
}

template <bool VectorMath, class T>
void glu(const GluArgs& a, std::vector<Tensor>& outs) {
  switch (a.activation) {
    case Activation::silu:
      return glu_loop<Activation::silu, VectorMath, T>(a, outs);
    case Activation::gelu_erf:
      return glu_loop<Activation::gelu_erf, VectorMath, T>(a, outs);
    default:
      return glu_loop<Activation::gelu_tanh, VectorMath, T>(a, outs);
  }
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
