// The thread pool behind parallel_for: one set of workers, static contiguous chunking (so a chunk's
// range depends only on n, grain and the thread count), and inline execution for nested calls; and
// parallel_for_paced, whose caller's range is sized by timing (core/pacing.h).
#include <dew/runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/autograd.h"
#include "core/pacing.h"

namespace dew {
namespace {

thread_local bool inside_pool_body = false;

// NOTE [spin before sleeping]: a decode step runs ~150 small parallel regions back to back; waking a
// worker from a futex sleep for each costs a large share of the step. So a worker that
// finishes polls for the next job, and the caller for its workers' completion, for a short while
// before sleeping on the atomic — as OpenMP runtimes do. The atomic's wait still carries every
// wake-up that a poll misses.
// NOTE [yielding before sleeping]: a thread woken from its futex sleep on an idle vCPU starts 30-40 us
// later here (the hypervisor wakes the halted vCPU first), so every parallel op after something that
// outlasted the spin — a oneDNN product, whose OpenMP threads need the cores — paid that much: bf16
// decode's row ops ran 3-8x their time (docs/perf.md, "Waiting without sleeping"). Past the spin, the
// poll goes on between sched_yield calls, which hand the core to any thread that wants it (OpenMP's),
// keeping it awake otherwise, up to kYield: the small products of a decode batch fit in it. Polling
// so for 2 ms slowed the prefill's longer oneDNN products by a fifth: the yields do not hand over all
// of the core.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr auto kYield = std::chrono::microseconds(300);

template <class Ready>
bool spin_until(Ready ready) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > start + kSpin) break;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  while (std::chrono::steady_clock::now() < start + kYield) {
    if (ready()) return true;
    std::this_thread::yield();
  }
  return ready();
}

int default_threads() {
  if (const char* env = std::getenv("DEW_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    DEW_REQUIRE(end != env && *end == '\0' && n >= 1 && n <= 1024,
                "DEW_THREADS='{}' is not a thread count; expected an integer from 1 to 1024", env);
    return int(n);
  }
  // The ranks an MPI launcher started on this machine share its cores (docs/parallel.md).
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const char* local_ranks = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  return std::max(1, cores / std::max(1, local_ranks ? std::atoi(local_ranks) : 1));
}

// NOTE [pool handshake]: a job is published by storing job_ and chunks_, then bumping generation_;
// every worker acknowledges every generation (pending_ counts all workers, needed or not), so the
// caller cannot publish the next job while a worker may still read this one's fields. Both sides
// hand over through atomics and C++20 atomic wait/notify, which touch the futex only when a side
// is actually asleep: no mutex on the hot path, whose contention cost a syscall per handover.
class Pool {
 public:
  explicit Pool(int threads) { resize(threads); }
  ~Pool() { stop(); }

  int size() const { return threads_; }

  void resize(int threads) {
    stop();
    threads_ = threads;
    claimed_ = std::make_unique<std::atomic<bool>[]>(size_t(threads));
    asleep_ = std::make_unique<std::atomic<bool>[]>(size_t(threads));
    quit_.store(false);
    // A new worker waits for the next job, not one that ran before it existed (its job_ is gone).
    const uint32_t current = generation_.load();
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, current] { work(i, current); });
  }

  // Runs job(chunk) for chunk in [0, chunks), chunk 0 on the calling thread.
  // NOTE [unstarted chunks]: a chunk runs on whichever thread claims it first: its worker, or the caller
  // once its own chunk is done and the worker was asleep when it looked. A worker still waking (30-40
  // us from a sleep here, NOTE [yielding before sleeping]) so costs the caller its chunk's time instead
  // of the wake; one that polls, even if the system has not given it a core yet, keeps its chunk, and
  // its pace is what parallel_for_paced learns. The ranges are the chunks' as before: only the thread
  // that computes a range changes.
  void run(int chunks, const std::function<void(int)>& job) {
    std::unique_lock call_lock(call_mutex_);
    job_ = &job;
    chunks_ = chunks;
    for (int c = 1; c < chunks; ++c) claimed_[size_t(c)].store(false, std::memory_order_relaxed);
    pending_.store(int(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    inside_pool_body = true;
    std::exception_ptr error;
    try {
      job(0);
      for (int c = 1; c < chunks; ++c)
        if (asleep_[size_t(c)].load(std::memory_order_acquire) &&
            !claimed_[size_t(c)].exchange(true, std::memory_order_acq_rel))
          job(c);
    } catch (...) {
      error = std::current_exception();
    }
    inside_pool_body = false;
    if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; }))
      for (int left; (left = pending_.load(std::memory_order_acquire)) != 0;) pending_.wait(left);
    std::lock_guard lock(error_mutex_);
    if (!error) error = error_;
    error_ = nullptr;
    job_ = nullptr;
    if (error) std::rethrow_exception(error);
  }

 private:
  void work(int index, uint32_t seen) {
    inside_pool_body = true;
    detail::Untracked kernels_only;  // workers run kernel bodies: their views never join a graph
    for (;;) {
      if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
        asleep_[size_t(index)].store(true, std::memory_order_release);
        generation_.wait(seen, std::memory_order_acquire);
        asleep_[size_t(index)].store(false, std::memory_order_release);
      }
      const uint32_t now = generation_.load(std::memory_order_acquire);
      if (now == seen) continue;  // woken spuriously
      seen = now;
      if (quit_.load(std::memory_order_acquire)) return;
      if (index < chunks_ && !claimed_[size_t(index)].exchange(true, std::memory_order_acq_rel)) {
        try {
          (*job_)(index);
        } catch (...) {
          std::lock_guard lock(error_mutex_);
          if (!error_) error_ = std::current_exception();
        }
      }
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
  }

  void stop() {
    quit_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex call_mutex_, error_mutex_;
  // Written by the caller before generation_'s release store, read by workers after its acquire load.
  const std::function<void(int)>* job_ = nullptr;
  // Per chunk: taken by a thread; per worker: sleeping on generation_ (NOTE [unstarted chunks]).
  std::unique_ptr<std::atomic<bool>[]> claimed_, asleep_;
  int chunks_ = 0;
  std::atomic<int> pending_ = 0;
  std::atomic<uint32_t> generation_ = 0;
  std::atomic<bool> quit_ = false;
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool* p = new Pool(default_threads());  // never destroyed: workers must outlive static teardown
  return *p;
}

}  // namespace

int num_threads() {
  return pool().size();
}

void set_num_threads(int n) {
  DEW_REQUIRE(n >= 1 && n <= 1024, "set_num_threads({}): expected 1 to 1024 threads", n);
  if (n != pool().size()) pool().resize(n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(pool().size(), (n + grain - 1) / grain);
  if (chunks <= 1 || inside_pool_body) return body(0, n);
  pool().run(int(chunks), [&](int c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    body(begin, end);
  });
}

namespace {

size_t slot_of(int64_t n) {
  return size_t((uint64_t(n) * 0x9E3779B97F4A7C15ull) >> 61) % Pacing::kSlots;
}

}  // namespace

double Pacing::caller_share(int64_t n, int threads) const {
  const Slot& s = slots_[slot_of(n)];
  const float share = s.share.load(std::memory_order_relaxed);
  return s.n.load(std::memory_order_relaxed) == n && share > 0 ? share : 1.0 / threads;
}

void Pacing::record(int64_t n, int threads, int64_t caller_items, double caller_seconds, int64_t worker_items,
                    double worker_seconds) {
  if (caller_items <= 0 || worker_items <= 0 || caller_seconds <= 0 || worker_seconds <= 0) return;
  // The share at which the caller and threads - 1 workers at the paces just seen finish together, half
  // taken at each call (a call's timing is noisy), never below half nor above twice an equal share.
  const double caller_pace = double(caller_items) / caller_seconds,
               worker_pace = double(worker_items) / worker_seconds;
  const double even = 1.0 / threads,
               target = std::clamp(caller_pace / (caller_pace + (threads - 1) * worker_pace), 0.5 * even,
                                   std::min(0.9, 2 * even));
  Slot& s = slots_[slot_of(n)];
  const double previous = caller_share(n, threads);
  s.n.store(n, std::memory_order_relaxed);
  s.share.store(float(0.5 * (previous + target)), std::memory_order_relaxed);
}

int64_t paced_chunks(int64_t n, int64_t grain) {
  grain = std::max<int64_t>(grain, 1);
  return std::clamp<int64_t>((n + grain - 1) / grain, 1, pool().size());
}

void parallel_for_paced(Pacing& pacing, int64_t n, int64_t grain,
                        const std::function<void(int, int64_t, int64_t)>& body) {
  using Clock = std::chrono::steady_clock;
  if (n <= 0) return;
  const int chunks = int(paced_chunks(n, grain));
  if (chunks <= 1 || inside_pool_body) return body(0, 0, n);
  const int64_t first =
      std::clamp<int64_t>(std::llround(pacing.caller_share(n, chunks) * double(n)), 1, n - (chunks - 1));
  const auto range = [&](int c) {  // chunk c's [begin, end)
    return c == 0 ? std::pair<int64_t, int64_t>{0, first}
                  : std::pair<int64_t, int64_t>{first + (n - first) * (c - 1) / (chunks - 1),
                                                first + (n - first) * c / (chunks - 1)};
  };
  struct alignas(64) End {  // a line each: the workers write them at once
    Clock::time_point at;
    bool by_caller = false;
  };
  End few[8];
  std::vector<End> many(chunks > 8 ? size_t(chunks) : 0);
  End* ends = chunks > 8 ? many.data() : few;
  const Clock::time_point start = Clock::now();
  const std::thread::id caller = std::this_thread::get_id();
  pool().run(chunks, [&](int c) {
    const auto [begin, end] = range(c);
    body(c, begin, end);
    ends[c].at = Clock::now();
    ends[c].by_caller = std::this_thread::get_id() == caller;
  });
  // A worker's range the caller ran (NOTE [unstarted chunks]) times no worker's pace.
  for (int c = 1; c < chunks; ++c)
    if (ends[c].by_caller) return;
  int slowest = 1;
  for (int c = 2; c < chunks; ++c)
    if (ends[c].at > ends[slowest].at) slowest = c;
  const auto seconds = [&](int c) { return std::chrono::duration<double>(ends[c].at - start).count(); };
  const auto [b, e] = range(slowest);
  pacing.record(n, chunks, first, seconds(0), e - b, seconds(slowest));
}

}  // namespace dew
