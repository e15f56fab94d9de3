// What a Chain holds: its record stages, the batch at the end, and the prefetching thread. Shared by
// chain.cc (building, iterating, seeing) and position.cc (saving and resuming).
#pragma once

#include "data/cache.h"
#include "data/prefetch.h"
#include "data/schedule.h"
#include "data/stage.h"

#include <memory>
#include <mutex>
#include <optional>

namespace dew::data {

struct Chain::State {
  explicit State(std::unique_ptr<detail::Stage> root) : head(std::move(root)) {}  // a source or a mixture
  explicit State(std::unique_ptr<detail::Schedule> phases) : schedule(std::move(phases)) {}
  std::unique_ptr<detail::Stage> head;  // the last record stage; the source at the bottom (null: a schedule)
  std::unique_ptr<detail::Schedule> schedule;  // a chain of phases instead of stages
  std::optional<int64_t> batch_size;           // global rows per batch
  Shard shard;
  int64_t prefetch = 0;  // batches built ahead by a thread; 0: none
  int64_t batches = 0;   // batches returned so far (the next one's index)
  int64_t batch_records = 0, batch_real_tokens = 0, batch_padding = 0;
  CacheOptions cache;
  bool prepared = false;  // the cache has been consulted (at the first read or resume)
  std::mutex stages;      // the stages are used by the prefetch thread and by stats()
  std::unique_ptr<detail::Prefetcher> prefetcher;
  detail::Cursor last_position;  // with prefetch: the stages' position after the last batch returned

  // Builds global batch `batches` from the stages (the caller holds `stages`); nullopt at the end.
  std::optional<Batch> build_batch();
  detail::Json description() const;
  // Puts make(head) on top of the record stages (none may follow batch or prefetch).
  template <class Make>
  void grow(const char* stage, Make make) {
    require_growing(stage);
    head = make(std::move(head));
  }
  void require_growing(const char* stage) const;
  void prepare();  // consults the cache once, before anything is read
};

}  // namespace dew::data
