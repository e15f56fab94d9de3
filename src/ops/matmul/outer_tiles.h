// Outer-product tiles, per CPU tier (NOTE [kernel namespaces]): y (P,Q) = sum over steps t of a column
// of a (P values, broadcast one at a time) times a row of b (Q contiguous values), a tile of MR rows by
// two vectors of columns accumulating in registers. For operands that lie contiguous along the output's
// columns: grouped_matmul's weight gradient and (G,K,N) weights. (Tried for matmul's few rows against
// GPT-2's (K,N) weights: no faster than oneDNN in a decode step, docs/perf.md.) Each output sums its
// steps in order, whatever the tile it falls in.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/kernel_types.h"
#include "simd/float_vec.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

#if DEW_HAS_FLOAT_VEC
inline constexpr int64_t kOuterColumns = 2 * kVecWidth;  // a tile's columns

template <int MR, bool Whole, class T, class Store>
void outer_tile(const T* a, int64_t a_step, int64_t a_row, const T* b, int64_t Q, int64_t steps, int64_t p0,
                int64_t q0, Store& store) {
  constexpr int W = kVecWidth;
  // Whole: two full vectors of columns; else the last columns, masked (the loop below has no branch:
  // one in it kept the accumulators on the stack).
  const int lanes0 = Whole ? W : int(std::min<int64_t>(W, Q - q0));
  const int lanes1 = Whole ? W : int(std::clamp<int64_t>(Q - q0 - W, 0, W));
  FloatVec acc[MR][2];
  for (int m = 0; m < MR; ++m) acc[m][0] = acc[m][1] = 0.0f;
  for (int64_t t = 0; t < steps; ++t) {
    const T* bt = b + t * Q + q0;
    FloatVec b0, b1;
    if constexpr (Whole) {
      b0 = load_vec(bt), b1 = load_vec(bt + W);
    } else {
      b0 = load_vec(bt, lanes0), b1 = load_vec(bt + W, lanes1);
    }
    for (int m = 0; m < MR; ++m) {
      const FloatVec am(widen<float>(a[t * a_step + (p0 + m) * a_row]));
      acc[m][0] = mul_add(am, b0, acc[m][0]);
      acc[m][1] = mul_add(am, b1, acc[m][1]);
    }
  }
  alignas(64) float sums[2 * W];
  for (int m = 0; m < MR; ++m) {
    store_vec(sums, acc[m][0]);
    store_vec(sums + W, acc[m][1]);
    for (int c = 0; c < lanes0 + lanes1; ++c) store(p0 + m, q0 + c, sums[c]);
  }
}

template <int MR, bool Whole, class T, class Store>
void outer_rows(const T* a, int64_t a_step, int64_t a_row, int64_t P, const T* b, int64_t Q, int64_t steps,
                int64_t q0, Store& store) {
  int64_t p0 = 0;
  for (; p0 + MR <= P; p0 += MR) outer_tile<MR, Whole>(a, a_step, a_row, b, Q, steps, p0, q0, store);
  for (; p0 < P; ++p0) outer_tile<1, Whole>(a, a_step, a_row, b, Q, steps, p0, q0, store);
}

// Column block q0 (kOuterColumns wide, or the last columns) of y (P,Q), y[p][q] = sum over steps t of
// a[t a_step + p a_row] b[t Q + q], each output through store(p, q, value).
template <class T, class Store>
void outer_block(const T* a, int64_t a_step, int64_t a_row, int64_t P, const T* b, int64_t Q, int64_t steps,
                 int64_t q0, Store&& store) {
  constexpr int MR = kVecWidth == 16 ? 8 : 4;  // AVX2's 16 registers hold 4 x 2 accumulators
  if (q0 + kOuterColumns <= Q)
    outer_rows<MR, true>(a, a_step, a_row, P, b, Q, steps, q0, store);
  else
    outer_rows<MR, false>(a, a_step, a_row, P, b, Q, steps, q0, store);
}
#endif

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
