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

// NB vectors of columns from d0 of out = out * correction + sum over j < keys of weight[j] v[j]: the
// even keys' terms and the odd keys' in two sets of sums kept in registers, added at the end. One
// column vector at a time, or one set, made each sum a chain of multiply-adds waiting on the latency
// of the one before.
template <int NB, class T>
[[gnu::always_inline]] inline void add_weighted_block(float* out, const T* const* v, const float* weight,
                                                      int keys, float correction, int64_t d0) {
  constexpr int W = kVecWidth;
  FloatVec even[NB], odd[NB];
  for (int u = 0; u < NB; ++u) even[u] = load_vec(out + d0 + u * W) * FloatVec(correction), odd[u] = 0.0f;
  int j = 0;
  for (; j + 1 < keys; j += 2) {
    const FloatVec w0(weight[j]), w1(weight[j + 1]);
    for (int u = 0; u < NB; ++u) {
      even[u] = mul_add(w0, load_vec(v[j] + d0 + u * W), even[u]);
      odd[u] = mul_add(w1, load_vec(v[j + 1] + d0 + u * W), odd[u]);
    }
  }
  if (j < keys)
    for (int u = 0; u < NB; ++u) even[u] = mul_add(FloatVec(weight[j]), load_vec(v[j] + d0 + u * W), even[u]);
  for (int u = 0; u < NB; ++u) store_vec(out + d0 + u * W, even[u] + odd[u]);
}

// out (D) = out * correction + sum over j < keys of weight[j] v[j], blocks of up to 4 column vectors
// at a time, then a tail of fewer than kVecWidth columns.
template <class T>
inline void add_weighted_values(float* out, const T* const* v, const float* weight, int keys,
                                float correction, int64_t D) {
  constexpr int W = kVecWidth, kBlock = 4;
  const int64_t full = D / W * W;
  const int tail = int(D - full);
  for (int64_t d0 = 0; d0 < full; d0 += kBlock * W) {
    switch (std::min<int64_t>(kBlock, (full - d0) / W)) {
      case 1:
        add_weighted_block<1>(out, v, weight, keys, correction, d0);
        break;
      case 2:
        add_weighted_block<2>(out, v, weight, keys, correction, d0);
        break;
      case 3:
        add_weighted_block<3>(out, v, weight, keys, correction, d0);
        break;
      default:
        add_weighted_block<4>(out, v, weight, keys, correction, d0);
    }
  }
  if (tail > 0) {
    FloatVec o = load_vec(out + full, tail) * FloatVec(correction);
    for (int j = 0; j < keys; ++j) o = mul_add(FloatVec(weight[j]), load_vec(v[j] + full, tail), o);
    store_vec(out + full, o, tail);
  }
}

// Keys [first, last) for `group` query heads q (widened, D each): m, l and acc (D per head) carry each
// head's running max, sum and unnormalized output, as the portable loop's do.
template <class T>
void paged_keys_vec(const PagedRows<T>& rows, int64_t first, int64_t last, const float* q, int64_t group,
                    float scale, float cap, float* m, float* l, float* acc) {
  constexpr int W = kVecWidth;
  const int64_t D = rows.D, full = D / W * W;
  const int tail = int(D - full);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const T *k[W], *v[W];
  for (int64_t j0 = first; j0 < last; j0 += W) {
    const int keys = int(std::min<int64_t>(W, last - j0));
    for (int j = 0; j < keys; ++j) {
      const int64_t r = rows.row(j0 + j);
      k[j] = rows.k_cache + r, v[j] = rows.v_cache + r;
    }
    rows.prefetch(j0 + W, std::min(last, j0 + 2 * W));
    for (int64_t g = 0; g < group; ++g) {
      const float* qg = q + g * D;
      // kInterleave keys' dots side by side, so that their chains of multiply-adds overlap; a key past
      // `keys` repeats the last one and its dot is dropped.
      constexpr int kInterleave = 8;
      FloatVec dots[W];
      for (int j0 = 0; j0 < W; j0 += kInterleave) {
        FloatVec s[kInterleave];
        const T* kr[kInterleave];
        for (int u = 0; u < kInterleave; ++u) s[u] = 0.0f, kr[u] = k[std::min(j0 + u, keys - 1)];
        if (j0 < keys) {
          int64_t d = 0;
          for (; d < full; d += W) {
            const FloatVec qv = load_vec(qg + d);
            for (int u = 0; u < kInterleave; ++u) s[u] = mul_add(qv, load_vec(kr[u] + d), s[u]);
          }
          if (tail > 0) {
            const FloatVec qv = load_vec(qg + d, tail);
            for (int u = 0; u < kInterleave; ++u) s[u] = mul_add(qv, load_vec(kr[u] + d, tail), s[u]);
          }
        }
        for (int u = 0; u < kInterleave; ++u) dots[j0 + u] = j0 + u < keys ? s[u] : FloatVec(0.0f);
      }
      FloatVec scores = lanes_sums(dots) * FloatVec(scale);
      if (cap > 0) scores = tanh_f32(scores / FloatVec(cap)) * FloatVec(cap);
      // The max over the tile's keys (lanes past them, and NaN, passed over); a NaN score still
      // reaches the output through its weight.
      const float new_m = std::max(m[g], lanes_max(max_skipping_nan(FloatVec(minus_inf), scores, keys)));
      const float correction = exp_f32(m[g] - new_m);
      const FloatVec p = keep_first_lanes(exp_f32(scores - FloatVec(new_m)), keys);
      alignas(64) float weight[W];
      store_vec(weight, p);
      add_weighted_values(acc + g * D, v, weight, keys, correction, D);
      l[g] = l[g] * correction + lanes_sum(p);
      m[g] = new_m;
    }
  }
}
#endif

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
