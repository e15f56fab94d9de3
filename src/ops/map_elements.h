// Elementwise maps over contiguous data: y_k[i] = f(x_0[i], x_1[i], ...)[k], with f written on widened
// scalars in a plain loop the compiler vectorizes. Narrow outputs (bf16) are computed in float chunks
// that stay in L1 and then narrowed, natively where the CPU can (NOTE [native bf16 narrowing]).
// Included inside a DEW_KERNEL_NS namespace (NOTE [kernel namespaces]).
#pragma once

#include <dew/runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops/kernel_types.h"
#include "simd/float_vec.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [native bf16 narrowing]
// Rounding f32 to bf16 with integer arithmetic (dtype.h) costs about 8 vector instructions per 16
// values, a third of a cheap exp. AVX512-BF16's vcvtneps2bf16 does it in one, rounding to nearest even
// and quieting NaN as dtype.h does, but it treats subnormal inputs as zero. So on CPUs that have it,
// maps narrow 16 values at a time natively, and a group that holds a subnormal with integers (rare, and
// exact either way; f32x16.h's store_vec). Maps whose function has a FloatVec form narrow in registers
// on F32x16 (not on F32x8: NOTE [maps on F32x8]); the others compute float chunks in L1 and narrow those.

inline constexpr int64_t kMapChunk = 256;  // floats per output: stays in L1 beside the inputs

// NOTE [prefetching maps]
// A map whose function costs about what its memory does (a sigmoid, a GELU, a bf16 log) ran at the sum
// of the two, not the larger: the hardware prefetchers stop at page ends and fall behind a loop this
// slow. So maps ask for their inputs (and, for writing, their outputs) kPrefetchBytes ahead, which
// brings them near their in-cache time. Prefetches are hints that never
// fault, so addresses past a row's end are computed as integers and asked for: in a contiguous tensor
// they are the next row's, the one the next call reads.
// A burst of prefetches stalls the loop once the line-fill buffers are full (cross_entropy spent a
// quarter of its time on one of 32-64 lines per block), so the vector loops ask for one step's lines at
// a time; the chunked loops ask for a chunk's (8 lines an input or output), which measured the same as
// asking per vector on F32x8. The row kernels that stream (softmax, cross_entropy, the one-row GEMV)
// ask per step too.
inline constexpr uintptr_t kPrefetchBytes = 2048;
template <int Write, class T>
[[gnu::always_inline]] inline void prefetch_ahead(const T* p, int64_t elements,
                                                  uintptr_t distance = kPrefetchBytes) {
  const uintptr_t from = reinterpret_cast<uintptr_t>(p) + distance;
  for (uintptr_t b = 0; b < uintptr_t(elements) * sizeof(T); b += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(from + b), Write, 3);
}
// Every input's and output's elements [i, i + count) kPrefetchBytes ahead.
template <class T, size_t NIn, size_t NOut>
[[gnu::always_inline]] inline void prefetch_map(const std::array<const T*, NIn>& x,
                                                const std::array<T*, NOut>& y, int64_t i, int64_t count) {
  for (size_t k = 0; k < NIn; ++k) prefetch_ahead<0>(x[k] + i, count);
  for (size_t k = 0; k < NOut; ++k) prefetch_ahead<1>(y[k] + i, count);
}

#if DEW_HAS_NATIVE_BF16 && !DEW_HAS_F32X16
#error "native bf16 narrowing goes through F32x16's store_vec: a tier with one has the other"
#endif
template <bool NativeBf16, class T, class Acc>
inline void narrow_chunk(const Acc* v, T* y, int64_t n) {
  int64_t i = 0;
#if DEW_HAS_NATIVE_BF16
  if constexpr (NativeBf16 &&
                std::is_same_v<T, bf16>) {  // store_vec narrows a group with a subnormal by integers
    for (; i + 16 <= n; i += 16) store_vec(y + i, F32x16(_mm512_loadu_ps(v + i)));
    if (i < n) store_vec(y + i, load_vec(v + i, int(n - i)), int(n - i));
    return;
  }
#endif
  for (; i < n; ++i) y[i] = narrow<T>(v[i]);
}

// Whether T results narrow natively here: bf16, in a tier built with the instruction, on a CPU with it.
template <class T>
inline bool narrows_natively() {
#if DEW_HAS_NATIVE_BF16
  if constexpr (std::is_same_v<T, bf16>) return cpu_features().avx512bf16;
#endif
  return false;
}

// y[i] = narrow<T>(v[i]) for i in [0, n), natively where the CPU can.
template <class T, class Acc>
inline void narrow_row(const Acc* v, T* y, int64_t n) {
  if (narrows_natively<T>()) return narrow_chunk<true>(v, y, n);
  narrow_chunk<false>(v, y, n);
}

// f(x_0[i], x_1[i], ...) as an array of its NOut results.
template <size_t NOut, class T, size_t NIn, class F, size_t... K>
[[gnu::always_inline]] inline auto map_call(F& f, const std::array<const T*, NIn>& x, int64_t i,
                                            std::index_sequence<K...>) {
  using Acc = AccumulatorOf<T>;
  if constexpr (NOut == 1)
    return std::array<Acc, 1>{f(widen<Acc>(x[K][i])...)};
  else
    return f(widen<Acc>(x[K][i])...);
}

template <bool NativeBf16, class T, size_t NIn, size_t NOut, class F>
[[gnu::always_inline]] inline void map_elements_loop(const std::array<const T*, NIn>& x,
                                                     const std::array<T*, NOut>& y, int64_t n, F& f) {
  using Acc = AccumulatorOf<T>;
  constexpr auto inputs = std::make_index_sequence<NIn>{};
  if constexpr (std::is_same_v<T, Acc>) {
    for (int64_t i = 0; i < n; ++i) {
      const std::array<Acc, NOut> r = map_call<NOut>(f, x, i, inputs);
      for (size_t k = 0; k < NOut; ++k) y[k][i] = r[k];
    }
  } else {
    alignas(64) Acc out[NOut][kMapChunk];
    for (int64_t c = 0; c < n; c += kMapChunk) {
      const int64_t len = std::min(kMapChunk, n - c);
      prefetch_map(x, y, c, len);  // NOTE [prefetching maps]
      std::array<const T*, NIn> xc;
      for (size_t k = 0; k < NIn; ++k) xc[k] = x[k] + c;
      for (int64_t i = 0; i < len; ++i) {
        const std::array<Acc, NOut> r = map_call<NOut>(f, xc, i, inputs);
        for (size_t k = 0; k < NOut; ++k) out[k][i] = r[k];
      }
      for (size_t k = 0; k < NOut; ++k) narrow_chunk<NativeBf16>(out[k], y[k] + c, len);
    }
  }
}

#if DEW_HAS_FLOAT_VEC
// Whether f takes NIn FloatVec arguments: a kernel says so by giving a generic lambda (constrained to
// the functions written over F, NOTE [one body for scalar and vector float functions]).
template <class F, size_t... K>
constexpr bool takes_float_vec(std::index_sequence<K...>) {
  return std::is_invocable_v<F&, decltype((void)K, FloatVec())...>;
}

// The same map a vector at a time on FloatVec, the tail a partial vector.
template <class T, size_t NIn, size_t NOut, class F, size_t... K>
inline void map_elements_vec(const std::array<const T*, NIn>& x, const std::array<T*, NOut>& y, int64_t n,
                             F& f, std::index_sequence<K...>) {
  // Pointers copied out of the arrays: the stores (void*) could alias the arrays, which kept the
  // compiler reloading them every group.
  const std::array<const T*, NIn> in = x;
  const std::array<T*, NOut> out = y;
  constexpr int W = kVecWidth;
  const auto apply = [&](int64_t i, int lanes) __attribute__((always_inline)) {
    const auto r = lanes == W ? f(load_vec(in[K] + i)...) : f(load_vec(in[K] + i, lanes)...);
    if constexpr (NOut == 1)
      store_vec(out[0] + i, r, lanes);
    else
      for (size_t k = 0; k < NOut; ++k) store_vec(out[k] + i, r[k], lanes);
  };
  int64_t i = 0;
#if DEW_HAS_F32X16
  if constexpr (std::is_same_v<T, bf16> && NOut == 1)  // NOTE [bf16 maps by even and odd]
    for (; i + 2 * W <= n; i += 2 * W) {
      prefetch_map(in, out, i, 2 * W);
      const std::array<EvenOdd16, NIn> v{load_even_odd(in[K] + i)...};
      if (!store_even_odd(out[0] + i, f(v[K].even...), f(v[K].odd...))) apply(i, W), apply(i + W, W);
    }
#endif
  if constexpr (W == 16)  // two vectors a step on F32x16 only (NOTE [maps on F32x8])
    for (; i + 2 * W <= n; i += 2 * W) prefetch_map(in, out, i, 2 * W), apply(i, W), apply(i + W, W);
  for (; i + W <= n; i += W) prefetch_map(in, out, i, W), apply(i, W);  // NOTE [prefetching maps]
  if (i < n) apply(i, int(n - i));
}

// NOTE [maps on F32x8]
// AVX2 has sixteen vector registers, AVX-512 thirty-two. Maps on F32x8 that held more at once spilled:
// two vectors a step (F32x16's loop) is slower than one for the longer functions, and bf16 maps that
// narrow in registers (a dozen integer instructions and their constants beside the function's) are
// slower than the scalar body's float chunks. So F32x8 maps take one vector a step, and a bf16 map computes a
// chunk of float results on vectors into L1 and narrows the chunk in a second loop.
#if DEW_HAS_F32X8
template <class T, size_t NIn, size_t NOut, class F, size_t... K>
inline void map_elements_vec_chunks(const std::array<const T*, NIn>& x, const std::array<T*, NOut>& y,
                                    int64_t n, F& f, std::index_sequence<K...>) {
  const std::array<const T*, NIn> in = x;
  const std::array<T*, NOut> out = y;
  constexpr int W = kVecWidth;
  alignas(64) float chunk[NOut][kMapChunk];
  for (int64_t c = 0; c < n; c += kMapChunk) {
    const int64_t len = std::min(kMapChunk, n - c);
    prefetch_map(in, out, c, len);  // NOTE [prefetching maps]
    for (int64_t i = 0; i < len; i += W) {
      const int lanes = int(std::min<int64_t>(W, len - i));
      const auto r = lanes == W ? f(load_vec(in[K] + c + i)...) : f(load_vec(in[K] + c + i, lanes)...);
      if constexpr (NOut == 1)
        store_vec(chunk[0] + i, r);  // chunk has room for a whole vector past len
      else
        for (size_t k = 0; k < NOut; ++k) store_vec(chunk[k] + i, r[k]);
    }
    for (size_t k = 0; k < NOut; ++k) narrow_chunk<false>(chunk[k], out[k] + c, len);
  }
}
#endif

// body(c, len, in) for each chunk [c, c + len) of n elements, with in[k] the chunk of f16 input k widened
// into L1 by vcvtph2ps. dtype.h's conversions, vectorized by the compiler, cost about 25 instructions a
// vector: neg f16 took twice bf16's time through them.
template <size_t NIn, class Body>
inline void for_each_widened_f16_chunk(const std::array<const f16*, NIn>& x, int64_t n, Body&& body) {
  alignas(64) float in[NIn][kMapChunk];
  for (int64_t c = 0; c < n; c += kMapChunk) {
    const int64_t len = std::min(kMapChunk, n - c);
    for (size_t k = 0; k < NIn; ++k) convert_row_vec(x[k] + c, in[k], len);
    body(c, len, in);
  }
}

// f16 maps whose function has no FloatVec form: f on each widened chunk in a loop the compiler
// vectorizes, the results narrowed by vcvtps2ph.
template <size_t NIn, size_t NOut, class F, size_t... K>
inline void map_elements_f16_chunks(const std::array<const f16*, NIn>& x, const std::array<f16*, NOut>& y,
                                    int64_t n, F& f, std::index_sequence<K...> inputs) {
  for_each_widened_f16_chunk(x, n, [&](int64_t c, int64_t len, const float(&in)[NIn][kMapChunk]) {
    prefetch_map(x, y, c, len);  // NOTE [prefetching maps]
    alignas(64) float out[NOut][kMapChunk];
    const std::array<const float*, NIn> xc{in[K]...};
    for (int64_t i = 0; i < len; ++i) {
      const std::array<float, NOut> r = map_call<NOut>(f, xc, i, inputs);
      for (size_t k = 0; k < NOut; ++k) out[k][i] = r[k];
    }
    for (size_t k = 0; k < NOut; ++k) convert_row_vec(out[k], y[k] + c, len);
  });
}
#endif

// What a map's function costs, for bf16 on F32x8 (NOTE [maps on F32x8]): one that computes narrows its
// results by chunks; one of a few instructions (an add, a maximum) narrows in registers, which spill
// nothing there and saves the chunk's second pass.
enum class MapWork { computes, few_instructions };

// y_k[i] = f(widened x_0[i], x_1[i], ...)[k] for i in [0, n), narrowed to T; f returns one value
// (NOut = 1) or an array of NOut, and takes Acc (or, where it can, FloatVec) arguments.
template <class T, MapWork Work = MapWork::computes, size_t NIn, size_t NOut, class F>
inline void map_elements(const std::array<const T*, NIn>& x, const std::array<T*, NOut>& y, int64_t n, F f) {
#if DEW_HAS_FLOAT_VEC
  if constexpr ((std::is_same_v<T, float> ||
                 is_half_type<T>)&&takes_float_vec<F>(std::make_index_sequence<NIn>{}))
    if (rows_on_float_vec<T>()) {
#if DEW_HAS_F32X8
      if constexpr (std::is_same_v<T, bf16> && Work == MapWork::computes)  // f16 narrows in one instruction
        return map_elements_vec_chunks(x, y, n, f, std::make_index_sequence<NIn>{});
#endif
      return map_elements_vec(x, y, n, f, std::make_index_sequence<NIn>{});
    }
  if constexpr (std::is_same_v<T, f16>)
    return map_elements_f16_chunks(x, y, n, f, std::make_index_sequence<NIn>{});
#endif
  if (narrows_natively<T>()) return map_elements_loop<true>(x, y, n, f);
  map_elements_loop<false>(x, y, n, f);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
