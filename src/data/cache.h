// The automatic cache (docs/data.md): the stages from a source up to the last deterministic
// per-record one (map, filter, quality, dedup, near_dedup, decontaminate, tokenize; a global shuffle
// is only an order) are fingerprinted by their description — the sources' and tokenizer's content
// hashes with every parameter — and their output, per source record, is stored once in a file under
// the cache directory; a chain with the same prefix reads that file instead. Positions are the same
// either way: the prefix keeps no position beyond the source's.
#pragma once

#include "data/stage.h"

#include <string>

namespace dew::data::detail {

struct CacheSettings {
  std::string dir;        // resolved
  int64_t max_bytes = 0;  // the directory's cap: least recently used files go first
};
CacheSettings resolve_cache(const CacheOptions& options);

// Serves the cacheable prefix of the chain `head` owns (of each member, for a mixture) from the
// cache, building the cache file on a miss.
void cache_prefixes(std::unique_ptr<Stage>& head, const CacheSettings& settings);

}  // namespace dew::data::detail
