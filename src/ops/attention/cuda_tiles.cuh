// The tiling of the tensor-core attention kernels (cuda_mma.cu): blocks of 4 warps, 16 query rows
// per warp, key tiles of 64 staged in shared memory, and the fragment loads between them. bf16 is
// handled as raw bits (uint16_t) until it enters an mma. Layouts are attention's: q (B,T,H,D),
// k and v (B,S,Hkv,D), contiguous; D is 64 or 128.
#pragma once

#include <cstdint>

#include "cuda/mma.cuh"
#include "ops/attention/cuda.h"
#include "ops/attention/cuda_scores.cuh"

namespace dew::ops::cuda_kernels::tiles {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;    // query rows per block
constexpr int kKeys = 64;             // keys per shared tile
constexpr int kKeyTiles = kKeys / 8;  // the mma n-tiles of a tile's scores
constexpr int kPad = 8;  // bf16 per shared row beyond D: fragment loads of 8 rows hit 8 distinct bank groups

template <int D>
constexpr int tile_bytes() {
  return kKeys * (D + kPad) * int(sizeof(uint16_t));
}

// Two bf16 at p (4-byte aligned, shared or global memory) as one operand register.
__device__ __forceinline__ uint32_t pair_at(const uint16_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// The (b, h) and query rows [t0, t_last] of this block. Blocks run the query tiles of a head in
// reverse, so under a causal mask the tiles with the most keys start first.
struct BlockRows {
  int64_t b, h, t0, t_last;
};
__device__ inline BlockRows block_rows(const AttentionCall& c) {
  const int64_t tiles = (c.T + kRows - 1) / kRows, x = blockIdx.x;
  const int64_t bh = x / tiles, tile = tiles - 1 - x % tiles;
  const int64_t t0 = tile * kRows;
  return {bh / c.H, bh % c.H, t0, min(t0 + kRows, c.T) - 1};
}
inline dim3 block_grid(const AttentionCall& c) {
  return dim3(unsigned((c.T + kRows - 1) / kRows * c.B * c.H));
}

// The keys any row of the block can see: [first_tile, end), first_tile a multiple of kKeys.
struct KeyRange {
  int64_t first_tile, end;
};
__device__ inline KeyRange block_keys(const Mask& mask, int64_t t0, int64_t t_last) {
  const int64_t first = mask.first_key(t0), end = mask.end_key(t_last);
  const int64_t first_tile = first - first % kKeys;
  return {first_tile, end > first ? end : first_tile};
}

// True when every row of the block sees every key of tile j0: no element needs the mask.
__device__ inline bool tile_is_whole(const Mask& mask, const BlockRows& at, int64_t j0) {
  return !mask.c.q_segments && j0 + kKeys <= mask.c.S && mask.first_key(at.t_last) <= j0 &&
         mask.end_key(at.t0) >= j0 + kKeys;
}

// 64 rows of D into dst (rows of D + kPad), 16 bytes per thread and step: row r at first_row +
// r * row_stride, rows from `valid` on zeros (so a masked probability of 0 never meets garbage).
template <int D>
__device__ void load_tile(const uint16_t* __restrict__ first_row, int64_t row_stride, int64_t valid,
                          uint16_t* dst) {
  static_assert(kRows == kKeys, "query and key tiles share the loader");
  constexpr int kChunks = D / 8;
  for (int i = threadIdx.x; i < kKeys * kChunks; i += kThreads) {
    const int r = i / kChunks, chunk = i % kChunks;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < valid) value = *reinterpret_cast<const uint4*>(first_row + r * row_stride + chunk * 8);
    *reinterpret_cast<uint4*>(dst + r * (D + kPad) + chunk * 8) = value;
  }
}

// Keys [j0, j0 + kKeys) of KV head hk of a (B,S,Hkv,D) tensor; queries [t0, t0 + kRows) of head h of
// a (B,T,H,D) one.
template <int D>
__device__ void load_key_tile(const AttentionCall& c, const uint16_t* src, int64_t b, int64_t hk, int64_t j0,
                              uint16_t* dst) {
  load_tile<D>(src + ((b * c.S + j0) * c.Hkv + hk) * D, c.Hkv * D, c.S - j0, dst);
}
template <int D>
__device__ void load_query_tile(const AttentionCall& c, const uint16_t* src, int64_t b, int64_t h, int64_t t0,
                                uint16_t* dst) {
  load_tile<D>(src + ((b * c.T + t0) * c.H + h) * D, c.H * D, c.T - t0, dst);
}

// Fragments from a shared tile (rows of `stride` bf16). An A fragment of rows [r0, r0 + 16) and
// columns [c0, c0 + 16); a B fragment whose n runs down the tile's rows [n0, n0 + 8) and k along
// columns [k0, k0 + 16) (the tile holds B transposed: keys of K for Q K^T); and one whose k runs down
// rows [k0, k0 + 16) and n along columns [n0, n0 + 8) (the tile holds B itself: V for P V).
__device__ __forceinline__ void tile_a_fragment(const uint16_t* tile, int stride, int r0, int c0,
                                                uint32_t (&a)[4]) {
  const int g = threadIdx.x % 32 / 4, qd = threadIdx.x % 4;
  const uint16_t* p = tile + (r0 + g) * stride + c0 + 2 * qd;
  a[0] = pair_at(p), a[1] = pair_at(p + 8 * stride), a[2] = pair_at(p + 8),
  a[3] = pair_at(p + 8 * stride + 8);
}
__device__ __forceinline__ void tile_b_rows(const uint16_t* tile, int stride, int n0, int k0, uint32_t& b0,
                                            uint32_t& b1) {
  const int g = threadIdx.x % 32 / 4, qd = threadIdx.x % 4;
  const uint16_t* p = tile + (n0 + g) * stride + k0 + 2 * qd;
  b0 = pair_at(p), b1 = pair_at(p + 8);
}
__device__ __forceinline__ void tile_b_columns(const uint16_t* tile, int stride, int k0, int n0, uint32_t& b0,
                                               uint32_t& b1) {
  const int g = threadIdx.x % 32 / 4, qd = threadIdx.x % 4;
  const uint16_t* p = tile + (k0 + 2 * qd) * stride + n0 + g;
  b0 = cuda::pair_of(p[0], p[stride]), b1 = cuda::pair_of(p[8 * stride], p[9 * stride]);
}

// A warp's 16 rows of a (B,T,H,D) tensor as the A fragments of D / 16 k-steps; rows[0] is the lane's
// row g, rows[1] its row g + 8. Rows past T are zeros.
template <int D>
__device__ void load_a_fragments(const AttentionCall& c, const uint16_t* __restrict__ src, int64_t b,
                                 int64_t h, const int64_t (&rows)[2], uint32_t (&f)[D / 16][4]) {
  const int qd = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const bool in = rows[r] < c.T;
    const uint16_t* p = src + ((b * c.T + (in ? rows[r] : 0)) * c.H + h) * D + 2 * qd;
#pragma unroll
    for (int st = 0; st < D / 16; ++st) {
      f[st][r] = in ? pair_at(p + st * 16) : 0u;
      f[st][2 + r] = in ? pair_at(p + st * 16 + 8) : 0u;
    }
  }
}

// Two adjacent n-tiles of f32 accumulators as the hi and lo A fragments of their 16 columns.
__device__ __forceinline__ void split_a_fragment(const float (&even)[4], const float (&odd)[4],
                                                 uint32_t (&hi)[4], uint32_t (&lo)[4]) {
  const cuda::SplitPair p0 = cuda::split_bf16(even[0], even[1]), p1 = cuda::split_bf16(even[2], even[3]),
                        p2 = cuda::split_bf16(odd[0], odd[1]), p3 = cuda::split_bf16(odd[2], odd[3]);
  hi[0] = p0.hi, hi[1] = p1.hi, hi[2] = p2.hi, hi[3] = p3.hi;
  lo[0] = p0.lo, lo[1] = p1.lo, lo[2] = p2.lo, lo[3] = p3.lo;
}

// acc[nt] += A B^T over the tile's kKeyTiles n-tiles: A the warp's 16 rows as D / 16 k-steps of A
// fragments, B^T the tile's 64 rows (Q K^T when `tile` holds K, dO V^T when it holds V).
template <int D>
__device__ void add_product_with_rows(const uint32_t (&a)[D / 16][4], const uint16_t* tile,
                                      float (&acc)[kKeyTiles][4]) {
#pragma unroll
  for (int st = 0; st < D / 16; ++st)
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
      uint32_t b0, b1;
      tile_b_rows(tile, D + kPad, nt * 8, st * 16, b0, b1);
      cuda::mma_bf16(acc[nt], a[st], b0, b1);
    }
}

// acc[dt] += X B: X the warp's 16 x 64 f32 fragments (probabilities or score gradients), each split
// in hi and lo bf16 parts (NOTE [exact probabilities on tensor cores]); B the tile, its 64 rows as k
// and D columns as n (P V when `tile` holds V, dS K when it holds K).
template <int D>
__device__ void add_split_product(const float (&x)[kKeyTiles][4], const uint16_t* tile,
                                  float (&acc)[D / 8][4]) {
#pragma unroll
  for (int k16 = 0; k16 < kKeyTiles / 2; ++k16) {
    uint32_t hi[4], lo[4];
    split_a_fragment(x[2 * k16], x[2 * k16 + 1], hi, lo);
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      uint32_t b0, b1;
      tile_b_columns(tile, D + kPad, k16 * 16, dt * 8, b0, b1);
      cuda::mma_bf16(acc[dt], lo, b0, b1);
      cuda::mma_bf16(acc[dt], hi, b0, b1);
    }
  }
}

// The column, within the tile's 64, of element i (0-3) of n-tile nt of a C fragment (its row is the
// lane's g for i < 2, g + 8 after).
__device__ __forceinline__ int fragment_column(int nt, int i) {
  return nt * 8 + 2 * (threadIdx.x % 4) + (i & 1);
}

// Whether query t sees key j, in a tile whole or not (rows past T and keys past S see nothing).
__device__ __forceinline__ bool sees(const Mask& mask, bool whole, int64_t b, int64_t t, int64_t j) {
  return whole || (t < mask.c.T && j < mask.c.S && mask.visible(b, t, j));
}

// Reductions over the 4 lanes of a quad (the lanes holding one fragment row).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace dew::ops::cuda_kernels::tiles
