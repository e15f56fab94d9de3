// paged_attention: decode attention through a paged KV cache. One query per sequence, q (N,H,D), sitting
// after the keys it sees: sequence n's key j (0 <= j < lengths[n]) lives in k_cache and v_cache
// (blocks, Hkv, block_size, D) at block block_tables[n, j / block_size], slot j % block_size. Scores,
// window, softcap, sinks and grouped KV heads as attention has them (the query is at position
// lengths[n] - 1, so causal changes nothing); segments are refused. Outputs out (N,H,D) and lse (N,H).
// NOTE [paged partitions]: the keys of a sequence are split into partitions of kPagedPartition keys
// (split-KV), each reduced on its own and merged in order: a row's arithmetic depends on its own length
// only, never on the batch it runs in.
#pragma once

#include "ops/op.h"

namespace dew::ops {

inline constexpr int64_t kPagedPartition = 256;

struct PagedAttentionArgs {
  Tensor q, k_cache, v_cache, block_tables, lengths;
  AttentionOptions options;
  DType dtype() const { return q.dtype(); }
  Device device() const { return q.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

struct PagedAttention {
  DEW_OP_TYPE_MEMBERS(PagedAttentionArgs);
  static std::string_view name(const Args&) { return "paged_attention"; }
  static std::string case_label(const Args& a);
  static double flops(const Args& a);  // 4 H D per visible key of each sequence
  // Inference only: the cache is written in place and nothing upstream of it is differentiated.
  static Differentiation differentiation(std::string_view) { return Differentiation::non_differentiable; }
};

// NOTE [a KV head's keys together]: a block holds each KV head's block_size keys one after another (as
// vLLM's blocks do), so the keys of one KV head, which a kernel item reads, lie in runs of block_size x D
// rather than in runs of D, one a key; with the next tile's lines asked for ahead, the cache of 32
// sequences of 1,024 keys is read at two thirds of the triad's rate, where it was read at half
// (docs/perf.md, "Paged attention's cache layout").
// The element offset of key j's D values for KV head h, through one sequence's block table.
inline int64_t paged_key_offset(const int64_t* table, int64_t j, int64_t h, int64_t Hkv, int64_t block_size,
                                int64_t D) {
  return ((table[j / block_size] * Hkv + h) * block_size + j % block_size) * D;
}

// The keys sequence n sees: [first, lengths[n]), first > 0 under a sliding window.
inline int64_t paged_first_key(int64_t length, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, length - window) : 0;
}

void add_paged_attention_portable(select::Registry<PagedAttentionArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_paged_attention_cpu(select::Registry<PagedAttentionArgs>& r))

}  // namespace dew::ops
