// `dew bench memory`: the peak memory of one training step's forward and backward of a GPT-2-small
// shape, from the allocator's counters, against the activations llm.c's hand-written backward keeps
// for the same shape. A table, then one JSON line.
#pragma once

#include <cstdint>

namespace dew::bench {

struct MemoryBenchOptions {
  int64_t layers = 12, batch = 4, tokens = 256;
};
int run_memory_bench(const MemoryBenchOptions& options);

}  // namespace dew::bench
