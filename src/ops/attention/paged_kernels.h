// paged_attention's kernel, written once and compiled per instruction set (NOTE [kernel namespaces]):
// threads over (sequence, KV head, partition) items; an item walks its keys in tiles through the block
// table, widening each tile of keys and values once for every query head of its group, with an online
// softmax (on the tiers, f32 and bf16 caches take paged_keys_vec's vector loop instead, paged_vec_item.h);
// then each (sequence, head) merges its partitions in order (NOTE [paged partitions]).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/attention/paged.h"
#include "ops/attention/paged_vec_item.h"
#include "ops/kernel_types.h"
#include "simd/isa.h"
#include "simd/lanes.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

inline constexpr int64_t kPagedKeyTile = 32;

template <int L, bool VectorMathExp, class T>
void paged_attention_forward(const PagedAttentionArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  constexpr Acc kMinusInf = -std::numeric_limits<Acc>::infinity();
  const AttentionOptions& o = a.options;
  const int64_t N = a.q.size(0), H = a.q.size(1), D = a.q.size(2), Hkv = a.k_cache.size(1),
                block_size = a.k_cache.size(2), M = a.block_tables.size(1), group = H / Hkv;
  const Acc scale = Acc(o.scale > 0 ? o.scale : 1.0 / std::sqrt(double(D))), cap = Acc(o.softcap);
  const T *q = a.q.data<T>(), *kc = a.k_cache.data<T>(), *vc = a.v_cache.data<T>();
  const int64_t *tables = a.block_tables.data<int64_t>(), *lengths = a.lengths.data<int64_t>();
  // Partitions: sequence n's are [part_base[n], part_base[n + 1]).
  std::vector<int64_t> part_base(size_t(N) + 1, 0);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t keys = lengths[n] - paged_first_key(lengths[n], o.window);
    part_base[size_t(n) + 1] = part_base[size_t(n)] + (keys + kPagedPartition - 1) / kPagedPartition;
  }
  const int64_t parts = part_base[size_t(N)];
  // Per (partition, head): running max, sum and the unnormalized output.
  std::vector<Acc> part_m(size_t(parts * H)), part_l(size_t(parts * H)), part_acc(size_t(parts * H * D));
  std::vector<int64_t> part_sequence(static_cast<size_t>(parts));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = part_base[size_t(n)]; p < part_base[size_t(n) + 1]; ++p) part_sequence[size_t(p)] = n;

  // The tiers' f32 and bf16 caches take paged_keys_vec, which reads the cache in place: no tile buffers.
  constexpr bool kVectorKeys =
#if DEW_HAS_FLOAT_VEC
      L == kVecWidth && (std::is_same_v<T, float> || std::is_same_v<T, bf16>);
#else
      false;
#endif
  const size_t tile = kVectorKeys ? 0 : size_t(kPagedKeyTile * D);
  parallel_for(parts * Hkv, 1, [&](int64_t w0, int64_t w1) {
    std::vector<Acc> kt(tile), vt(tile), qg(size_t(group * D)), s(kVectorKeys ? 0 : size_t(kPagedKeyTile));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t part = w / Hkv, hk = w % Hkv, n = part_sequence[size_t(part)];
      const int64_t first =
          paged_first_key(lengths[n], o.window) + (part - part_base[size_t(n)]) * kPagedPartition;
      const int64_t last = std::min(lengths[n], first + kPagedPartition);
      for (int64_t i = 0; i < group * D; ++i) qg[size_t(i)] = widen<Acc>(q[(n * H + hk * group) * D + i]);
      Acc* m = part_m.data() + part * H + hk * group;
      Acc* l = part_l.data() + part * H + hk * group;
      Acc* acc = part_acc.data() + (part * H + hk * group) * D;
      std::fill(m, m + group, kMinusInf);
      std::fill(l, l + group, Acc(0));
      std::fill(acc, acc + group * D, Acc(0));
#if DEW_HAS_FLOAT_VEC
      if constexpr (kVectorKeys) {
        const PagedRows<T> rows{kc, vc, tables + n * M, block_size, Hkv, hk, D};
        paged_keys_vec(rows, first, last, qg.data(), group, scale, cap, m, l, acc);
        continue;
      }
#endif
      for (int64_t j0 = first; j0 < last; j0 += kPagedKeyTile) {  // key tiles
        const int64_t j1 = std::min(last, j0 + kPagedKeyTile);
        for (int64_t j = j0; j < j1; ++j) {  // gather the tile's rows through the block table
          const int64_t row = paged_key_offset(tables + n * M, j, hk, Hkv, block_size, D);
          for (int64_t d = 0; d < D; ++d) {
            kt[size_t((j - j0) * D + d)] = widen<Acc>(kc[row + d]);
            vt[size_t((j - j0) * D + d)] = widen<Acc>(vc[row + d]);
          }
        }
        for (int64_t g = 0; g < group; ++g) {
          Acc tile_max = kMinusInf;
          for (int64_t j = j0; j < j1; ++j) {
            Acc sc = scale * dot<L>(qg.data() + g * D, kt.data() + (j - j0) * D, D);
            if (cap > 0) sc = cap * std::tanh(sc / cap);
            s[size_t(j - j0)] = sc;
            tile_max = std::max(tile_max, sc);
          }
          const Acc new_m = std::max(m[g], tile_max);
          const Acc correction = exp_with<VectorMathExp>(m[g] - new_m);
          Acc* ar = acc + g * D;
          for (int64_t d = 0; d < D; ++d) ar[d] *= correction;
          Acc sum = 0;
          for (int64_t j = j0; j < j1; ++j) {
            const Acc p = exp_with<VectorMathExp>(s[size_t(j - j0)] - new_m);
            sum += p;
            const Acc* vj = vt.data() + (j - j0) * D;
            for (int64_t d = 0; d < D; ++d) ar[d] += p * vj[d];
          }
          l[g] = l[g] * correction + sum;
          m[g] = new_m;
        }
      }
    }
  });

  // Merge each (sequence, head)'s partitions in order, the sink joining the denominator with no value.
  T* out = outs[0].data<T>();
  Acc* lse = outs[1].data<Acc>();
  const bool sinks = a.options.sinks.defined();
  const Acc* sink = sinks ? a.options.sinks.data<Acc>() : nullptr;
  parallel_for(N * H, 16, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> merged(static_cast<size_t>(D));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / H, h = r % H;
      Acc top = sinks ? sink[h] : kMinusInf;
      for (int64_t p = part_base[size_t(n)]; p < part_base[size_t(n) + 1]; ++p)
        top = std::max(top, part_m[size_t(p * H + h)]);
      Acc total = sinks ? exp_with<VectorMathExp>(sink[h] - top) : Acc(0);
      std::fill(merged.begin(), merged.end(), Acc(0));
      for (int64_t p = part_base[size_t(n)]; p < part_base[size_t(n) + 1]; ++p) {
        const Acc weight = exp_with<VectorMathExp>(part_m[size_t(p * H + h)] - top);
        total += part_l[size_t(p * H + h)] * weight;
        const Acc* ap = part_acc.data() + (p * H + h) * D;
        for (int64_t d = 0; d < D; ++d) merged[size_t(d)] += ap[d] * weight;
      }
      const Acc inv = Acc(1) / total;
      for (int64_t d = 0; d < D; ++d) out[r * D + d] = narrow<T>(merged[size_t(d)] * inv);
      lse[r] = top + std::log(total);
    }
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
