// parallel_for_paced: parallel_for with one contiguous range per thread, the calling thread's range sized
// by what the previous calls from the same place measured. For kernels whose every output is the same
// whatever range computes it (each row's arithmetic its own): the ranges depend on timing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace dew {

// NOTE [paced ranges]: the calling thread starts its range at once, with its inputs in its own cache,
// while a worker starts a microsecond or more later and fetches them from the caller's core; equal
// ranges left the caller waiting for the workers at every call, a sixth of a decode step. A Pacing (one
// per call site, static) keeps, for the last few n seen there, the caller's share that makes both sides
// finish together, re-estimated from each call's timing.
class Pacing {
 public:
  static constexpr int kSlots = 8;
  // The caller's share of n items over `threads` (1/threads until a call with this n has been timed).
  double caller_share(int64_t n, int threads) const;
  // After a call of n items: the caller took `caller_items` in `caller_seconds`, the slowest worker
  // `worker_items` in `worker_seconds`, both from the call's start.
  void record(int64_t n, int threads, int64_t caller_items, double caller_seconds, int64_t worker_items,
              double worker_seconds);

 private:
  struct Slot {
    std::atomic<int64_t> n{0};
    std::atomic<float> share{0};
  };
  Slot slots_[kSlots];
};

// The ranges parallel_for_paced makes of n items: min(threads, ceil(n / grain)), at least 1; a body
// that keeps something per chunk sizes it by this.
int64_t paced_chunks(int64_t n, int64_t grain);
// Runs body(chunk, begin, end) over paced_chunks(n, grain) contiguous ranges of [0, n), in order,
// chunk 0 (the caller's) sized by `pacing`, the rest equal. Nested calls run inline as chunk 0.
void parallel_for_paced(Pacing& pacing, int64_t n, int64_t grain,
                        const std::function<void(int chunk, int64_t begin, int64_t end)>& body);

}  // namespace dew
