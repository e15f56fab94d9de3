// The paged KV cache's storage and its block bookkeeping: one pool of fixed-size blocks per layer
// (keys and values, (blocks, Hkv, block_size, D)), reference counts, and the prefix cache — full blocks
// known by their tokens and everything before them, kept after their last user until the pool needs
// them back (least recently used first). Not thread-safe: the engine's one thread owns it.
#pragma once

#include <dew/models.h>
#include <dew/tensor.h>

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace dew::serve {

class KvBlockPool {
 public:
  KvBlockPool(const ModelConfig& config, DType dtype, int64_t blocks, int64_t block_size);

  int64_t blocks() const { return int64_t(refs_.size()); }
  int64_t block_size() const { return block_size_; }
  // Blocks a sequence could get now: the free ones and the cached ones no sequence holds.
  int64_t available() const { return int64_t(free_.size() + lru_.size()); }
  int64_t in_use() const { return blocks() - available(); }
  const Tensor& keys(int64_t layer) const { return keys_[size_t(layer)]; }
  const Tensor& values(int64_t layer) const { return values_[size_t(layer)]; }
  // Bytes of one block over every layer, keys and values.
  static int64_t block_bytes(const ModelConfig& config, DType dtype, int64_t block_size);

  // A block for one holder: a free one, else the least recently used cached one (forgotten). None
  // when every block is held.
  std::optional<int64_t> allocate();
  void retain(int64_t block);
  // Drops one holder; a block no one holds goes back to the free list, or, when it is cached, to the
  // cache's eviction order (most recently used last).
  void release(int64_t block);

  // Prefix cache. A full block's key is its tokens and the cached block before it (the chain from the
  // sequence's start); lookup compares the tokens themselves, so no two prefixes collide, and a block
  // forgotten takes its descendants' entries with it (its id may come back holding other tokens).
  struct BlockKey {
    int64_t parent = -1;  // the cached block before it; -1 for a sequence's first block
    std::vector<int64_t> tokens;
  };
  // The cached block holding exactly `key`, retained for the caller; none when not cached.
  std::optional<int64_t> lookup(const BlockKey& key);
  // Records that `block` (held by the caller, full) holds `key`; a block already cached under the
  // key keeps the entry, and a block whose parent is not the cached one stays out.
  void publish(int64_t block, BlockKey key);
  int64_t lookups() const { return lookups_; }
  int64_t hits() const { return hits_; }

 private:
  struct KeyHash {
    size_t operator()(const BlockKey& k) const;
  };
  struct KeyEqual {
    bool operator()(const BlockKey& a, const BlockKey& b) const {
      return a.parent == b.parent && a.tokens == b.tokens;
    }
  };
  void forget(int64_t block);  // drops a cached block's entry and its descendants'

  int64_t block_size_;
  std::vector<Tensor> keys_, values_;
  std::vector<int64_t> refs_;
  std::vector<int64_t> free_;
  std::list<int64_t> lru_;                                  // cached, unheld blocks, least recent first
  std::vector<std::list<int64_t>::iterator> lru_position_;  // per block, valid when in lru_
  std::vector<bool> in_lru_;
  std::unordered_map<BlockKey, int64_t, KeyHash, KeyEqual> cached_;
  std::vector<std::optional<BlockKey>> key_of_;  // per block, when cached
  std::vector<std::vector<int64_t>> children_;   // per cached block, the cached blocks keyed after it
  int64_t lookups_ = 0, hits_ = 0;
};

}  // namespace dew::serve
