// prefetch: a thread that builds batches ahead into a bounded queue, each with the stages' position
// right after it, so that the consumer's position is exact whatever has been built ahead. An error on
// the thread reaches the consumer at the batch where it happened.
#pragma once

#include <dew/data.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace dew::data::detail {

struct Prefetched {
  std::optional<Batch> batch;     // nullopt: the chain ended
  std::vector<int64_t> position;  // the stages' position after it (NOTE [positions])
  std::exception_ptr error;
};

class Prefetcher {
 public:
  // `produce` builds the next batch and its position; it runs on the thread only.
  Prefetcher(int64_t capacity, std::function<Prefetched()> produce);
  ~Prefetcher();  // stops the thread; what was built ahead is dropped
  Prefetched pop();

 private:
  void run();
  int64_t capacity_;
  std::function<Prefetched()> produce_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Prefetched> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dew::data::detail
