// FloatVec: the instruction-set tier's float vector (F32x16 in avx512, F32x8 in avx2; none in portable
// builds), and the row helpers written once over it: a row's max, a row written vector by vector
// (streamed where asked), and whether a tier's vectors load and store T on this CPU. Kernels written
// over FloatVec, load_vec and store_vec run on both tiers. Included inside a DEW_KERNEL_NS namespace
// (NOTE [kernel namespaces]).
#pragma once

#include <dew/runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/kernel_types.h"
#include "simd/f32x16.h"
#include "simd/f32x8.h"
#include "simd/isa.h"

#define DEW_HAS_FLOAT_VEC (DEW_HAS_F32X16 || DEW_HAS_F32X8)

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

#if DEW_HAS_FLOAT_VEC
// Whether this tier's vectors take rows of T on this CPU: f32; f16 (vcvtph2ps and vcvtps2ph, exact and
// rounding to nearest even: F16C on the avx2 tier, AVX512F on the avx512); bf16 with F32x8 (integer
// rounding in registers) and with F32x16 where the CPU narrows natively (NOTE [native bf16 narrowing]).
template <class T>
inline bool rows_on_float_vec() {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, f16>) {
    return true;
  } else if constexpr (std::is_same_v<T, bf16>) {
#if DEW_HAS_F32X16
    return cpu_features().avx512bf16;
#else
    return true;
#endif
  } else {
    return false;
  }
}

// The sum of v's lanes, and the largest and smallest of lanes that hold no NaN (NOTE [across lanes by
// halves]).
inline float lanes_sum(FloatVec v) {
  return across_lanes<AcrossLanes::sum>(v);
}
inline float lanes_max(FloatVec v) {
  return across_lanes<AcrossLanes::max>(v);
}
inline float lanes_min(FloatVec v) {
  return across_lanes<AcrossLanes::min>(v);
}

// The largest (Max) or smallest of x[0..n), NaN skipped, and with NoteNan whether x holds a NaN; -inf
// (Max) or inf for n = 0. Four partials, so the loads do not wait on one chain of vmaxps latencies:
// rows bound by their max (cross_entropy, softmax) run faster than with one.
struct RowExtreme {
  float value;
  bool nan;  // with NoteNan only
};
template <bool Max, bool NoteNan, class T>
inline RowExtreme row_extreme_vec(const T* x, int64_t n) {
  const auto fold = [](FloatVec part, FloatVec v) __attribute__((always_inline)) {
    if constexpr (Max)
      return max_skipping_nan(part, v);
    else
      return min_skipping_nan(part, v);
  };
  const FloatVec start(Max ? -std::numeric_limits<float>::infinity()
                           : std::numeric_limits<float>::infinity());
  FloatVec part = start, p1 = start, p2 = start, p3 = start, nan_probe = 0.0f;  // NaN in a lane that saw one
  const auto note = [&](FloatVec v) __attribute__((always_inline)) {
    if constexpr (NoteNan) nan_probe = select(v == v, nan_probe, v);
  };
  int64_t i = 0;
  for (; i + 4 * kVecWidth <= n; i += 4 * kVecWidth) {
    const FloatVec v0 = load_vec(x + i), v1 = load_vec(x + i + kVecWidth),
                   v2 = load_vec(x + i + 2 * kVecWidth), v3 = load_vec(x + i + 3 * kVecWidth);
    part = fold(part, v0), p1 = fold(p1, v1), p2 = fold(p2, v2), p3 = fold(p3, v3);
    note(v0), note(v1), note(v2), note(v3);
  }
  part = fold(fold(part, p1), fold(p2, p3));  // partials hold no NaN
  for (; i + kVecWidth <= n; i += kVecWidth) {
    const FloatVec v = load_vec(x + i);
    part = fold(part, v), note(v);
  }
  if (i < n) {
    const FloatVec v = load_vec(x + i, int(n - i));  // its other lanes read as 0: neither NaN nor counted
    note(v);
    if constexpr (Max)
      part = max_skipping_nan(part, v, int(n - i));
    else
      part = min_skipping_nan(part, v, int(n - i));
  }
  const float m = Max ? lanes_max(part) : lanes_min(part);   // NOTE [across lanes by halves]
  const bool nan = NoteNan && lanes_sum(nan_probe) != 0.0f;  // NaN != 0; the probe's other lanes are 0
  return {m, nan};
}

// y[i] = x[i] for i in [0, n), converted through float (f16 and bf16 widened exactly, narrowed as
// store_vec narrows).
template <class S, class D>
inline void convert_row_vec(const S* x, D* y, int64_t n) {
  int64_t i = 0;
  for (; i + kVecWidth <= n; i += kVecWidth) store_vec(y + i, load_vec(x + i));
  if (i < n) store_vec(y + i, load_vec(x + i, int(n - i)), int(n - i));
}

// The largest of x[0..n) (NaN skipped); -inf for n = 0.
template <class T>
inline float row_max_vec(const T* x, int64_t n) {
  return row_extreme_vec<true, false>(x, n).value;
}

// NOTE [streaming large outputs]
// An output row written once and not read again by its op, in an output that outgrows the caches
// before the next op reads it (cross_entropy's GPT-2 gradient, 1024 x 50257 f32, is 206 MB): ordinary
// stores first read each line they fill (the read-for-ownership), a third stream of memory traffic.
// Non-temporal stores skip it.
// Smaller outputs, which the next op may find in cache, keep ordinary stores, and so do bf16 ones
// (half the bytes for the same arithmetic: their time is the arithmetic's). The writer fences (sfence) before
// its results are handed on.
inline constexpr int64_t kStreamOutputBytes = int64_t(64) << 20;

// y[i] = value(i, lanes) for i in [0, n), a vector at a time (lanes < kVecWidth only for the tail);
// `stream`: non-temporal stores for f32 from the row's first vector-aligned boundary (NOTE [streaming
// large outputs]).
template <class T, class V>
inline void write_row_vec(T* y, int64_t n, bool stream, V&& value) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (stream) {
      constexpr int64_t bytes = kVecWidth * int64_t(sizeof(float));
      const int64_t head = std::min(n, int64_t((bytes - reinterpret_cast<uintptr_t>(y) % bytes) % bytes) / 4);
      if (head > 0) store_vec(y, value(int64_t(0), int(head)), int(head));
      for (i = head; i + kVecWidth <= n; i += kVecWidth) stream_vec(y + i, value(i, kVecWidth));
    }
  }
  for (; i + kVecWidth <= n; i += kVecWidth) store_vec(y + i, value(i, kVecWidth));
  if (i < n) store_vec(y + i, value(i, int(n - i)), int(n - i));
}
#endif

// Whether an output of numel T values is written with non-temporal stores: f32 outputs of
// kStreamOutputBytes and more, in the tiers that have a FloatVec (NOTE [streaming large outputs]).
template <class T>
inline bool streams_output([[maybe_unused]] int64_t numel) {
#if DEW_HAS_FLOAT_VEC
  return std::is_same_v<T, float> && numel * int64_t(sizeof(T)) >= kStreamOutputBytes;
#else
  return false;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
