// The prefetch thread and its bounded queue.
#include "data/prefetch.h"

namespace dew::data::detail {

Prefetcher::Prefetcher(int64_t capacity, std::function<Prefetched()> produce)
    : capacity_(capacity), produce_(std::move(produce)), thread_([this] { run(); }) {}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Prefetcher::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || int64_t(queue_.size()) < capacity_; });
      if (stopping_) return;
    }
    Prefetched item;
    try {
      item = produce_();
    } catch (...) {
      item.error = std::current_exception();
    }
    const bool last = !item.batch || item.error;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(item));
    }
    changed_.notify_all();
    if (last) return;
  }
}

Prefetched Prefetcher::pop() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !queue_.empty(); });
  const Prefetched& front = queue_.front();
  // The end and an error stay queued, so that every later pop sees them too.
  if (!front.batch || front.error) return Prefetched{std::nullopt, front.position, front.error};
  Prefetched item = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return item;
}

}  // namespace dew::data::detail
