// The dot tiles of matmul's few-row products (cpu_dot_tiles.cc) and of grouped_matmul's groups
// (grouped_matmul/cpu.cc), per CPU tier (NOTE [kernel namespaces]): tiles of kTileRows rows of x by
// kTileCols rows of w (nn.Linear's (N,K)), each output one vector accumulator along K, so a tile loads
// MR + NR vectors for MR x NR fused multiply-adds. NOTE [rows one at a time]: every output is the same
// sequence of operations whatever the tile it falls in — one accumulator from zero over K in vector
// steps, the tail masked, then its lanes folded by halves (lanes_sum, or lanes_sums for a whole tile) —
// so a row's result does not depend on the rows that come with it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "simd/float_vec.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

#if DEW_HAS_FLOAT_VEC
// AVX-512's 32 registers hold 4 x 4 accumulators with their operands; AVX2's 16 hold 2 x 4.
inline constexpr int kTileRows = kVecWidth == 16 ? 4 : 2, kTileCols = 4;

// dots[m][n] = x_m . w_n for MR rows of x (widened, row stride K) and NR rows of w.
template <int MR, int NR, class T>
[[gnu::always_inline]] inline void dot_tile(const float* x, const T* w, int64_t K,
                                            float (&dots)[kTileRows][kTileCols]) {
  constexpr int64_t W = kVecWidth;
  FloatVec acc[MR][NR];
  for (int m = 0; m < MR; ++m)
    for (int n = 0; n < NR; ++n) acc[m][n] = 0.0f;
  int64_t k = 0;
  for (; k + W <= K; k += W) {
    FloatVec xv[MR];
    for (int m = 0; m < MR; ++m) xv[m] = load_vec(x + m * K + k);
    for (int n = 0; n < NR; ++n) {
      const FloatVec wv = load_vec(w + n * K + k);
      for (int m = 0; m < MR; ++m) acc[m][n] = mul_add(xv[m], wv, acc[m][n]);
    }
  }
  if (k < K) {
    const int lanes = int(K - k);
    FloatVec xv[MR];
    for (int m = 0; m < MR; ++m) xv[m] = load_vec(x + m * K + k, lanes);
    for (int n = 0; n < NR; ++n) {
      const FloatVec wv = load_vec(w + n * K + k, lanes);
      for (int m = 0; m < MR; ++m) acc[m][n] = mul_add(xv[m], wv, acc[m][n]);
    }
  }
  if constexpr (MR == kTileRows && NR == kTileCols) {  // a whole tile: one vector of sums, the same bits
    static_assert(kTileRows * kTileCols == kVecWidth);
    FloatVec all[kVecWidth];
    for (int m = 0; m < MR; ++m)
      for (int n = 0; n < NR; ++n) all[m * NR + n] = acc[m][n];
    store_vec(&dots[0][0], lanes_sums(all));
  } else {
    for (int m = 0; m < MR; ++m)
      for (int n = 0; n < NR; ++n) dots[m][n] = lanes_sum(acc[m][n]);
  }
}

template <int NR, class T>
void dot_rows(int rows, const float* x, const T* w, int64_t K, float (&dots)[kTileRows][kTileCols]) {
  if constexpr (kTileRows == 4) {
    if (rows == 4) return dot_tile<4, NR>(x, w, K, dots);
    if (rows == 3) return dot_tile<3, NR>(x, w, K, dots);
  }
  if (rows == 2) return dot_tile<2, NR>(x, w, K, dots);
  dot_tile<1, NR>(x, w, K, dots);
}

// Part `part` of `parts` of the cache lines of [p, p + bytes), asked into L1 ahead of their use.
inline void prefetch_part(const void* p, int64_t bytes, int64_t part, int64_t parts) {
  const int64_t lines = (bytes + 63) / 64;
  const char* c = static_cast<const char*>(p);
  for (int64_t l = lines * part / parts; l < lines * (part + 1) / parts; ++l)
    __builtin_prefetch(c + l * 64, 0, 3);
}

// Column tiles [t0, t1) of the product of M rows of x (widened, row stride K) with the N rows of w:
// store(m, n, x_m . w_n) for each output.
template <class T, class Store>
void dot_tile_columns(const float* x, int64_t M, const T* w, int64_t K, int64_t N, int64_t t0, int64_t t1,
                      Store&& store) {
  float dots[kTileRows][kTileCols];
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t n0 = t * kTileCols, cols = std::min<int64_t>(kTileCols, N - n0);
    const int64_t next = std::min<int64_t>(kTileCols, N - n0 - cols),
                  passes = (M + kTileRows - 1) / kTileRows;
    for (int64_t m0 = 0; m0 < M; m0 += kTileRows) {  // the tile's weights stay in L1 across the rows
      const int rows = int(std::min<int64_t>(kTileRows, M - m0));
      // The next tile's weights come from memory while this one's rows run from L1 (the first pass
      // alone, waiting on them, ran at half the rate of the others).
      if (next > 0) prefetch_part(w + (n0 + cols) * K, next * K * int64_t(sizeof(T)), m0 / kTileRows, passes);
      if (cols == kTileCols)
        dot_rows<kTileCols>(rows, x + m0 * K, w + n0 * K, K, dots);
      else
        for (int64_t c = 0; c < cols; ++c) {  // the last columns one at a time
          float one[kTileRows][kTileCols];
          dot_rows<1>(rows, x + m0 * K, w + (n0 + c) * K, K, one);
          for (int r = 0; r < rows; ++r) dots[r][c] = one[r][0];
        }
      for (int r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) store(m0 + r, n0 + c, dots[r][c]);
    }
  }
}
#endif

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
