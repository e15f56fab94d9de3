// KvBlockPool: the blocks' storage, reference counts, free list and the prefix cache's entries.
#include "serve/kv_block_pool.h"

#include <dew/error.h>

namespace dew::serve {

KvBlockPool::KvBlockPool(const ModelConfig& c, DType dtype, int64_t blocks, int64_t block_size)
    : block_size_(block_size),
      refs_(size_t(blocks), 0),
      lru_position_(size_t(blocks)),
      in_lru_(size_t(blocks), false),
      key_of_(size_t(blocks)),
      children_(size_t(blocks)) {
  DEW_REQUIRE(
      blocks >= 1 && block_size >= 1,
      "[serve] a KV cache of {} blocks of {} tokens; expected at least one block of at least one token",
      blocks, block_size);
  DEW_REQUIRE(dtype == DType::f32 || dtype == DType::bf16, "[serve] KV blocks of {}; expected f32 or bf16",
              dtype_name(dtype));
  // Every layer's keys and values in one storage, each a view of it: one block as large as the whole
  // cache comes in huge pages (the allocator's, NOTE [large blocks in huge pages]), where a layer's own
  // block of a few MiB came in 4 KiB pages, and the blocks of 32 sequences read at every layer outran
  // the TLB (docs/perf.md, "The KV cache in huge pages").
  int64_t attending = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) attending += c.attends(i);
  const Shape shape{blocks, c.num_key_value_heads, block_size, c.head_dim};  // as paged_attention reads it
  Shape every = shape;
  every.insert(every.begin(), 2 * attending);
  const Tensor storage = attending > 0 ? Tensor::empty(every, dtype) : Tensor();
  for (int64_t i = 0, next = 0; i < c.num_hidden_layers; ++i) {  // a recurrent layer keeps no keys
    const bool attends = c.attends(i);
    keys_.push_back(attends ? storage.select(0, next++) : Tensor());
    values_.push_back(attends ? storage.select(0, next++) : Tensor());
  }
  for (int64_t b = blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 handed out first
}

int64_t KvBlockPool::block_bytes(const ModelConfig& c, DType dtype, int64_t block_size) {
  int64_t attending = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) attending += c.attends(i);
  return 2 * attending * block_size * c.num_key_value_heads * c.head_dim * int64_t(dtype_size(dtype));
}

std::optional<int64_t> KvBlockPool::allocate() {
  int64_t block;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    block = lru_.front();
    lru_.pop_front();
    in_lru_[size_t(block)] = false;
    forget(block);
  } else {
    return std::nullopt;
  }
  refs_[size_t(block)] = 1;
  return block;
}

void KvBlockPool::retain(int64_t block) {
  if (refs_[size_t(block)]++ == 0 && in_lru_[size_t(block)]) {  // a cached block taken up again
    lru_.erase(lru_position_[size_t(block)]);
    in_lru_[size_t(block)] = false;
  }
}

void KvBlockPool::release(int64_t block) {
  DEW_REQUIRE(refs_[size_t(block)] > 0, "[serve] block {} released more often than it was held", block);
  if (--refs_[size_t(block)] > 0) return;
  if (key_of_[size_t(block)]) {
    lru_position_[size_t(block)] = lru_.insert(lru_.end(), block);
    in_lru_[size_t(block)] = true;
  } else {
    free_.push_back(block);
  }
}

size_t KvBlockPool::KeyHash::operator()(const BlockKey& k) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ uint64_t(k.parent);  // splitmix64 steps over the words
  for (int64_t t : k.tokens) {
    h ^= uint64_t(t) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  }
  return size_t(h ^ (h >> 31));
}

std::optional<int64_t> KvBlockPool::lookup(const BlockKey& key) {
  ++lookups_;
  const auto it = cached_.find(key);
  if (it == cached_.end()) return std::nullopt;
  ++hits_;
  retain(it->second);
  return it->second;
}

void KvBlockPool::publish(int64_t block, BlockKey key) {
  // A parent that is not itself cached (a duplicate of a cached block) would leave the entry keyed by an
  // id that may come back holding other tokens: such a block stays out of the cache.
  if (key_of_[size_t(block)] || cached_.count(key) || (key.parent >= 0 && !key_of_[size_t(key.parent)]))
    return;
  if (key.parent >= 0) children_[size_t(key.parent)].push_back(block);
  cached_.emplace(key, block);
  key_of_[size_t(block)] = std::move(key);
}

void KvBlockPool::forget(int64_t block) {
  if (!key_of_[size_t(block)]) return;
  cached_.erase(*key_of_[size_t(block)]);
  key_of_[size_t(block)].reset();
  // A descendant's key names this block's id, which may come back holding other tokens. Unheld
  // descendants become free blocks; held ones (none, while holders hold their whole chain) lose only
  // their entry.
  std::vector<int64_t> children;
  children.swap(children_[size_t(block)]);
  for (int64_t child : children) {
    if (!key_of_[size_t(child)] || key_of_[size_t(child)]->parent != block) continue;  // re-keyed since
    forget(child);
    if (in_lru_[size_t(child)]) {
      lru_.erase(lru_position_[size_t(child)]);
      in_lru_[size_t(child)] = false;
      free_.push_back(child);
    }
  }
}

}  // namespace dew::serve
