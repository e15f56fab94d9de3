// paged_attention's inner loop on a tier's FloatVec (f32 and bf16 caches; NOTE [kernel namespaces]):
// one item's keys for its group of query heads, kVecWidth keys at a time. Each key's score is a vector
// of partial products, and the tile's scores leave as one vector (lanes_sums) for the online softmax,
// where one dot at a time paid a fold of lanes per key and per head. Included by cpu_paged.cc only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "ops/attention/paged.h"
#include "simd/float_vec.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

#if DEW_HAS_FLOAT_VEC
// Rows of one sequence's cache for KV head hk, seen through its block table.
template <class T>
struct PagedRows {
  const T *k_cache, *v_cache;
  const int64_t* table;  // the sequence's blocks
  int64_t block_size, kv_heads, head, D;
  int64_t row(int64_t key) const { return paged_key_offset(table, key, head, kv_heads, block_size, D); }
  // The lines of keys [first, last) and their values asked for (into L2), a tile ahead of their use
  // (NOTE [a KV head's keys together]). Inlined: called, the kernel ran 7% slower.
  [[gnu::always_inline]] void prefetch(int64_t first, int64_t last) const {
    constexpr int64_t kLine = 64 / int64_t(sizeof(T));
    for (int64_t j = first; j < last; ++j) {
      const int64_t r = row(j);
      for (int64_t d = 0; d < D; d += kLine) {
        __builtin_prefetch(k_cache + r + d, 0, 2);
        __builtin_prefetch(v_cache + r + d, 0, 2);
      }
    }
  }
};

// NOTE [query heads of a group together]: a KV head's G query heads (up to 4 at a time) run through
// each tile side by side: each key's vector of K is multiplied into every head's dots and each of V
// into every head's output, and the heads' online-softmax steps, each a chain of dependent operations
// (lanes folded, the max, the exps), interleave instead of running one after another.

// G heads' outputs acc + g D (D each) = acc * correction[g] + sum over j < keys of weight[g W + j] v[j],
// NB column vectors from d0, each v[j] loaded once. With one head, its even keys' terms and its odd
// keys' in two sets of sums added at the end: one set made each sum a chain of multiply-adds waiting on
// the latency of the one before.
template <int G, int NB, class T>
[[gnu::always_inline]] inline void add_weighted_block_heads(float* acc, int64_t D, const T* const* v,
                                                            const float* weight, int keys,
                                                            const float* correction, int64_t d0) {
  constexpr int W = kVecWidth, S = G == 1 ? 2 : 1;
  FloatVec sum[S][G][NB];
  for (int g = 0; g < G; ++g)
    for (int u = 0; u < NB; ++u) {
      sum[0][g][u] = load_vec(acc + g * D + d0 + u * W) * FloatVec(correction[g]);
      if constexpr (S == 2) sum[1][g][u] = 0.0f;
    }
  const auto add_key = [&](int j, FloatVec(&into)[G][NB]) {
    FloatVec value[NB];
    for (int u = 0; u < NB; ++u) value[u] = load_vec(v[j] + d0 + u * W);
    for (int g = 0; g < G; ++g) {
      const FloatVec w(weight[g * W + j]);
      for (int u = 0; u < NB; ++u) into[g][u] = mul_add(w, value[u], into[g][u]);
    }
  };
  int j = 0;
  for (; j + S <= keys; j += S)
    for (int set = 0; set < S; ++set) add_key(j + set, sum[set]);
  if (j < keys) add_key(j, sum[0]);
  for (int g = 0; g < G; ++g)
    for (int u = 0; u < NB; ++u) {
      FloatVec total = sum[0][g][u];
      if constexpr (S == 2) total = total + sum[1][g][u];
      store_vec(acc + g * D + d0 + u * W, total);
    }
}

// The same over all D columns: blocks of NB vectors (fewer at the end), then a tail of fewer than
// kVecWidth columns.
template <int G, class T>
inline void add_weighted_values_heads(float* acc, int64_t D, const T* const* v, const float* weight, int keys,
                                      const float* correction) {
  constexpr int W = kVecWidth, NB = W == 16 ? 4 : 2;  // G x NB sums in registers
  const int64_t full = D / W * W;
  const int tail = int(D - full);
  int64_t d0 = 0;
  for (; d0 + NB * W <= full; d0 += NB * W)
    add_weighted_block_heads<G, NB>(acc, D, v, weight, keys, correction, d0);
  for (; d0 < full; d0 += W) add_weighted_block_heads<G, 1>(acc, D, v, weight, keys, correction, d0);
  if (tail > 0)
    for (int g = 0; g < G; ++g) {
      FloatVec o = load_vec(acc + g * D + full, tail) * FloatVec(correction[g]);
      for (int j = 0; j < keys; ++j) o = mul_add(FloatVec(weight[g * W + j]), load_vec(v[j] + full, tail), o);
      store_vec(acc + g * D + full, o, tail);
    }
}

// One tile of `keys` keys (rows k[j], v[j]) for G query heads q + g D (widened): each head's scores a
// vector (lanes_sums of each key's vector of partial products), then the online softmax's step on m,
// l and acc (D per head), as the portable loop's. NOTE [query heads of a group together].
template <int G, class T>
[[gnu::always_inline]] inline void paged_tile_heads(const T* const* k, const T* const* v, int keys,
                                                    const float* q, int64_t D, float scale, float cap,
                                                    float* m, float* l, float* acc) {
  constexpr int W = kVecWidth;
  // Keys whose dots run side by side: G x kInterleave chains of multiply-adds in flight.
  constexpr int kInterleave = G == 1 ? 8 : G == 2 ? (W == 16 ? 8 : 4) : (W == 16 ? 4 : 2);
  const int64_t full = D / W * W;
  const int tail = int(D - full);
  FloatVec dots[G][W];
  for (int j0 = 0; j0 < W; j0 += kInterleave) {
    FloatVec s[G][kInterleave];
    const T* kr[kInterleave];  // a key past `keys` repeats the last one and its dot is dropped
    for (int u = 0; u < kInterleave; ++u) kr[u] = k[std::min(j0 + u, keys - 1)];
    for (int g = 0; g < G; ++g)
      for (int u = 0; u < kInterleave; ++u) s[g][u] = 0.0f;
    if (j0 < keys) {
      int64_t d = 0;
      for (; d < full; d += W)
        for (int g = 0; g < G; ++g) {
          const FloatVec qv = load_vec(q + g * D + d);
          for (int u = 0; u < kInterleave; ++u) s[g][u] = mul_add(qv, load_vec(kr[u] + d), s[g][u]);
        }
      if (tail > 0)
        for (int g = 0; g < G; ++g) {
          const FloatVec qv = load_vec(q + g * D + d, tail);
          for (int u = 0; u < kInterleave; ++u) s[g][u] = mul_add(qv, load_vec(kr[u] + d, tail), s[g][u]);
        }
    }
    for (int g = 0; g < G; ++g)
      for (int u = 0; u < kInterleave; ++u) dots[g][j0 + u] = j0 + u < keys ? s[g][u] : FloatVec(0.0f);
  }
  const float minus_inf = -std::numeric_limits<float>::infinity();
  alignas(64) float weight[G * W];
  float correction[G];
  for (int g = 0; g < G; ++g) {
    FloatVec scores = lanes_sums(dots[g]) * FloatVec(scale);
    if (cap > 0) scores = tanh_f32(scores / FloatVec(cap)) * FloatVec(cap);
    // The max over the tile's keys (lanes past them, and NaN, passed over); a NaN score still reaches
    // the output through its weight.
    const float new_m = std::max(m[g], lanes_max(max_skipping_nan(FloatVec(minus_inf), scores, keys)));
    correction[g] = exp_f32(m[g] - new_m);
    const FloatVec p = keep_first_lanes(exp_f32(scores - FloatVec(new_m)), keys);
    store_vec(weight + g * W, p);
    l[g] = l[g] * correction[g] + lanes_sum(p);
    m[g] = new_m;
  }
  add_weighted_values_heads<G>(acc, D, v, weight, keys, correction);
}

// Keys [first, last) for `group` query heads q (widened, D each): m, l and acc (D per head) carry each
// head's running max, sum and unnormalized output, as the portable loop's do; kVecWidth keys a tile,
// the heads up to 4 at a time.
template <class T>
void paged_keys_vec(const PagedRows<T>& rows, int64_t first, int64_t last, const float* q, int64_t group,
                    float scale, float cap, float* m, float* l, float* acc) {
  constexpr int W = kVecWidth;
  const int64_t D = rows.D;
  const T *k[W], *v[W];
  for (int64_t j0 = first; j0 < last; j0 += W) {
    const int keys = int(std::min<int64_t>(W, last - j0));
    for (int j = 0; j < keys; ++j) {
      const int64_t r = rows.row(j0 + j);
      k[j] = rows.k_cache + r, v[j] = rows.v_cache + r;
    }
    rows.prefetch(j0 + W, std::min(last, j0 + 2 * W));
    for (int64_t g = 0; g < group; g += 4) {
      const float* qg = q + g * D;
      float *mg = m + g, *lg = l + g, *ag = acc + g * D;
      switch (std::min<int64_t>(4, group - g)) {
        case 1:
          paged_tile_heads<1>(k, v, keys, qg, D, scale, cap, mg, lg, ag);
          break;
        case 2:
          paged_tile_heads<2>(k, v, keys, qg, D, scale, cap, mg, lg, ag);
          break;
        case 3:
          paged_tile_heads<3>(k, v, keys, qg, D, scale, cap, mg, lg, ag);
          break;
        default:
          paged_tile_heads<4>(k, v, keys, qg, D, scale, cap, mg, lg, ag);
      }
    }
  }
}
#endif

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
