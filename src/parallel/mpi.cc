// The MPI communicator (MPI_COMM_WORLD of the ranks mpirun started): data moves by MPI's non-blocking
// all-to-all, all-gather and broadcast; sums are Dew's (NOTE [the fixed tree], communicator.cc), so
// their bits depend on neither timing nor Open MPI's algorithm choice. An all-reduce is a reduce-scatter
// (each rank receives every rank's copy of its shard and adds them in the fixed order) followed by an
// all-gather of the summed shards: 2 (P - 1) / P of the tensor sent per rank, as a ring's.
#include <dew/error.h>
#include <dew/parallel.h>

#include <climits>
#include <cstring>
#include <deque>

#include "parallel/bounded_wait.h"
#include "parallel/checks.h"

#if DEW_WITH_MPI
#include <mpi.h>
#endif

namespace dew::parallel {

#if DEW_WITH_MPI
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  fail("[mpi] {} failed: {}", what, std::string(text, size_t(length)));
}

// MPI is process-wide by nature: initialized once on first use (unless the program did), errors
// returned rather than aborting, finalized at exit when Dew initialized it.
struct MpiRuntime {
  bool owned = false;
  MpiRuntime() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      owned = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned && !finalized) MPI_Finalize();
  }
};

void ensure_mpi() {
  static MpiRuntime runtime;
}

// A bounded wait (NOTE [bounded waits], bounded_wait.h) on an MPI request.
void wait_bounded(MPI_Request& request, double timeout_s, int rank, const char* what, WaitClock& clock) {
  parallel::wait_bounded(
      [&] {
        int done = 0;
        check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        return done != 0;
      },
      timeout_s, rank, what, clock);
}

int count_of(int64_t bytes, const char* collective) {
  DEW_REQUIRE(bytes <= INT_MAX, "[{}] {} bytes in one message; expected at most {} (MPI counts are int)",
              collective, bytes, INT_MAX);
  return int(bytes);
}

template <class T>
void sum_shards(const Tensor& received, int ranks, int64_t shard, T* out) {
  std::vector<const T*> parts;
  for (int r = 0; r < ranks; ++r) parts.push_back(received.data<T>() + int64_t(r) * shard);
  fixed_tree_sum(parts, out, shard);
}

void sum_shards_of(const Tensor& received, int ranks, int64_t shard, void* out) {
  if (received.dtype() == DType::f32)
    sum_shards(received, ranks, shard, static_cast<float*>(out));
  else
    sum_shards(received, ranks, shard, static_cast<double*>(out));
}

class ReduceScatterThenGather;

// NOTE [ordered second phases]: MPI requires every rank to start its collectives on a communicator in
// one order. A reduction's second phase (the all-gather of the summed shards) starts when its
// all-to-all completes, which differs in time between ranks; so the all-gathers run on a communicator
// of their own, and each starts only after every reduction started before it has started its own —
// the all-to-alls' order, the same on every rank. The queue below holds the reductions whose
// all-to-all is in flight, in start order.
struct ExchangeQueue {
  MPI_Comm comm = MPI_COMM_NULL;         // the world's: every collective but the second phases
  MPI_Comm gather_comm = MPI_COMM_NULL;  // the second phases
  double timeout_s = 0;                  // NOTE [bounded waits]
  int rank = 0;
  WaitClock clock;
  std::deque<ReduceScatterThenGather*> exchanging;
  void poll();                                      // moves on the head reductions that are done
  void complete_through(ReduceScatterThenGather*);  // blocks until this one has moved on
};

class Request final : public Work {
 public:
  Request(ExchangeQueue& queue, const char* what, std::vector<Tensor> keep)
      : queue_(queue), what_(what), keep_(std::move(keep)) {}
  MPI_Request request = MPI_REQUEST_NULL;
  void wait() override { wait_bounded(request, queue_.timeout_s, queue_.rank, what_, queue_.clock); }
  bool test() override {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done;
  }

 private:
  ExchangeQueue& queue_;
  const char* what_;
  std::vector<Tensor> keep_;  // alive until the request completes
};

// Reduce-scatter by all-to-all, the fixed-order sum, then (for an all-reduce) the all-gather. Three
// phases: the all-to-all in flight; the all-gather in flight; done.
class ReduceScatterThenGather final : public Work {
 public:
  ReduceScatterThenGather(ExchangeQueue& queue, const Tensor& send, Tensor shard_out, Tensor gathered,
                          Tensor target, int ranks, int64_t shard)
      : queue_(queue),
        send_(send),
        shard_out_(std::move(shard_out)),
        gathered_(std::move(gathered)),
        target_(std::move(target)),
        ranks_(ranks),
        shard_(shard) {
    received_ = Tensor::empty({int64_t(ranks) * shard}, send.dtype());
    const int bytes = count_of(shard * int64_t(dtype_size(send.dtype())), "reduce_scatter_sum");
    check_mpi(MPI_Ialltoall(send_.raw_data(), bytes, MPI_BYTE, received_.raw_data(), bytes, MPI_BYTE,
                            queue_.comm, &request_),
              "MPI_Ialltoall");
    queue_.exchanging.push_back(this);
  }
  ~ReduceScatterThenGather() override {
    try {  // a reduction dropped unfinished still takes its turn, or every later one would wait forever
      wait();
    } catch (...) {
    }
  }
  void wait() override {
    queue_.complete_through(this);
    if (phase_ == Phase::gathering) {
      wait_bounded(request_, queue_.timeout_s, queue_.rank, "an all-reduce's all-gather", queue_.clock);
      finish();
    }
  }
  bool test() override {
    queue_.poll();
    if (phase_ == Phase::gathering) {
      int done = 0;
      check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) finish();
    }
    return phase_ == Phase::done;
  }

  // The all-to-all: done yet (block: wait for it)?
  bool exchanged(bool block) {
    int done = 1;
    if (block)
      wait_bounded(request_, queue_.timeout_s, queue_.rank, "a reduction's all-to-all", queue_.clock);
    else
      check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done;
  }
  // After the all-to-all, in the queue's order: the fixed-order sum, and the all-gather started.
  void sum_and_gather() {
    sum_shards_of(received_, ranks_, shard_, shard_out_.raw_data());
    received_ = Tensor();
    if (!gathered_.defined()) {  // a reduce-scatter: the shard is the result
      phase_ = Phase::done;
      return;
    }
    const int bytes = count_of(shard_ * int64_t(dtype_size(send_.dtype())), "all_reduce_sum");
    check_mpi(MPI_Iallgather(shard_out_.raw_data(), bytes, MPI_BYTE, gathered_.raw_data(), bytes, MPI_BYTE,
                             queue_.gather_comm, &request_),
              "MPI_Iallgather");
    phase_ = Phase::gathering;
  }
  bool exchanging() const { return phase_ == Phase::exchanging; }

 private:
  void finish() {
    if (gathered_.raw_data() != target_.raw_data())  // padded: the target's part of the gathered shards
      std::memcpy(target_.raw_data(), gathered_.raw_data(),
                  size_t(target_.numel()) * dtype_size(target_.dtype()));
    phase_ = Phase::done;
  }

  ExchangeQueue& queue_;
  Tensor send_, shard_out_, gathered_, target_, received_;
  int ranks_;
  int64_t shard_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  enum class Phase { exchanging, gathering, done } phase_ = Phase::exchanging;
};

void ExchangeQueue::poll() {
  while (!exchanging.empty() && exchanging.front()->exchanged(false)) {
    ReduceScatterThenGather* head = exchanging.front();
    exchanging.pop_front();
    head->sum_and_gather();
  }
}

void ExchangeQueue::complete_through(ReduceScatterThenGather* work) {
  while (work->exchanging()) {
    ReduceScatterThenGather* head = exchanging.front();
    head->exchanged(true);
    exchanging.pop_front();
    head->sum_and_gather();
  }
}

// A reduction to one rank: every rank's part gathered there (one MPI phase, so no ordering beyond the
// start), then added in the fixed order on the root.
class GatherThenSum final : public Work {
 public:
  GatherThenSum(ExchangeQueue& queue, const Tensor& in, Tensor out, int root, int ranks)
      : queue_(queue), in_(in), out_(std::move(out)), ranks_(ranks) {
    const int64_t n = in.numel();
    if (queue.rank == root) received_ = Tensor::empty({int64_t(ranks) * n}, in.dtype());
    const int bytes = count_of(n * int64_t(dtype_size(in.dtype())), "reduce_sum");
    check_mpi(
        MPI_Igather(in_.raw_data(), bytes, MPI_BYTE, received_.defined() ? received_.raw_data() : nullptr,
                    bytes, MPI_BYTE, root, queue.comm, &request_),
        "MPI_Igather");
  }
  ~GatherThenSum() override {
    try {
      wait();
    } catch (...) {
    }
  }
  void wait() override {
    if (done_) return;
    wait_bounded(request_, queue_.timeout_s, queue_.rank, "a reduction to one rank", queue_.clock);
    finish();
  }
  bool test() override {
    if (done_) return true;
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) finish();
    return done_;
  }

 private:
  void finish() {
    done_ = true;
    if (received_.defined()) sum_shards_of(received_, ranks_, in_.numel(), out_.raw_data());
    received_ = Tensor();
  }
  ExchangeQueue& queue_;
  Tensor in_, out_, received_;
  int ranks_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

// The ranks of an MPI communicator: the world, or a group split from it.
class MpiGroup final : public Communicator {
 public:
  explicit MpiGroup(MPI_Comm ranks) {
    ensure_mpi();
    check_mpi(MPI_Comm_rank(ranks, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(ranks, &size_), "MPI_Comm_size");
    queue_.rank = rank_;
    // Communicators of its own: two groups' collectives never pair with each other's.
    for (MPI_Comm* comm : {&queue_.comm, &queue_.gather_comm}) {
      check_mpi(MPI_Comm_dup(ranks, comm), "MPI_Comm_dup");
      MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    }
  }
  // Its reductions must be finished (waited for, or dropped) before it goes.
  ~MpiGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      for (MPI_Comm* comm : {&queue_.comm, &queue_.gather_comm}) MPI_Comm_free(comm);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  std::unique_ptr<Work> start_all_reduce_sum(Tensor& t) override {
    check_summed("all_reduce_sum", t);
    const int64_t n = t.numel(), shard = (n + size_ - 1) / size_, padded = shard * size_;
    Tensor send = t.reshape({n});
    if (padded != n) {  // the last shards padded with zeros, so that every message is the same size
      send = Tensor::zeros({padded}, t.dtype());
      std::memcpy(send.raw_data(), t.raw_data(), size_t(n) * dtype_size(t.dtype()));
    }
    // Unpadded, the summed shards are gathered straight into t.
    const Tensor gathered = padded == n ? t.reshape({n}) : Tensor::empty({padded}, t.dtype());
    return std::make_unique<ReduceScatterThenGather>(queue_, send, Tensor::empty({shard}, t.dtype()),
                                                     gathered, t, size_, shard);
  }
  std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& in, Tensor& out) override {
    check_reduce_scatter(in, out, size_);
    return std::make_unique<ReduceScatterThenGather>(queue_, in, out, Tensor(), Tensor(), size_, out.numel());
  }
  std::unique_ptr<Work> start_all_gather(const Tensor& in, Tensor& out) override {
    check_all_gather(in, out, size_);
    auto work = std::make_unique<Request>(queue_, "an all-gather", std::vector<Tensor>{in, out});
    const int bytes = count_of(in.numel() * int64_t(dtype_size(in.dtype())), "all_gather");
    check_mpi(MPI_Iallgather(in.raw_data(), bytes, MPI_BYTE, out.raw_data(), bytes, MPI_BYTE, queue_.comm,
                             &work->request),
              "MPI_Iallgather");
    return work;
  }
  std::unique_ptr<Work> start_broadcast(Tensor& t, int root) override {
    check_broadcast(t, root, size_);
    auto work = std::make_unique<Request>(queue_, "a broadcast", std::vector<Tensor>{t});
    const int bytes = count_of(t.numel() * int64_t(dtype_size(t.dtype())), "broadcast");
    check_mpi(MPI_Ibcast(t.raw_data(), bytes, MPI_BYTE, root, queue_.comm, &work->request), "MPI_Ibcast");
    return work;
  }
  std::unique_ptr<Work> start_reduce_sum(const Tensor& in, Tensor& out, int root) override {
    check_reduce(in, out, root, rank_, size_);
    return std::make_unique<GatherThenSum>(queue_, in, out, root, size_);
  }
  void barrier() override {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibarrier(queue_.comm, &request), "MPI_Ibarrier");
    wait_bounded(request, queue_.timeout_s, rank_, "a barrier", queue_.clock);
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    DEW_REQUIRE(color >= 0, "[mpi] split color {}; expected >= 0", color);
    MPI_Comm part = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(queue_.comm, color, key, &part), "MPI_Comm_split");
    auto group = std::make_unique<MpiGroup>(part);  // its own duplicates of `part`
    MPI_Comm_free(&part);
    group->set_timeout(queue_.timeout_s);
    return group;
  }
  void set_timeout(double seconds) override { queue_.timeout_s = seconds; }
  double seconds_waiting() const override { return queue_.clock.seconds_waiting(); }

 private:
  int rank_ = 0, size_ = 1;
  ExchangeQueue queue_;
};

}  // namespace

std::unique_ptr<Communicator> mpi_world() {
  return std::make_unique<MpiGroup>(MPI_COMM_WORLD);
}
bool built_with_mpi() {
  return true;
}

void abort_launched(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized && launched_world_size() > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

#else

std::unique_ptr<Communicator> mpi_world() {
  fail(
      "[mpi] this build of Dew has no MPI; install libopenmpi-dev and openmpi-bin (tools/setup-debian.sh) "
      "and "
      "configure with DEW_MPI=AUTO or ON");
}
bool built_with_mpi() {
  return false;
}

void abort_launched(int) {}

#endif

}  // namespace dew::parallel
