// The MPI communicator (MPI_COMM_WORLD of the ranks mpirun started): data moves by MPI's non-blocking
// all-to-all, all-gather and broadcast; sums are Dew's (NOTE [the fixed tree], communicator.cc), so
// their bits depend on neither timing nor Open MPI's algorithm choice. An all-reduce is a reduce-scatter
// (each rank receives every rank's copy of its shard and adds them in the fixed order) followed by an
// all-gather of the summed shards: 2 (P - 1) / P of the tensor sent per rank, as a ring's.
#include <dew/error.h>
#include <dew/parallel.h>

#include <climits>
#include <cstring>

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

class Request final : public Work {
 public:
  explicit Request(std::vector<Tensor> keep) : keep_(std::move(keep)) {}
  MPI_Request request = MPI_REQUEST_NULL;
  void wait() override { check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait"); }

 private:
  std::vector<Tensor> keep_;  // alive until the request completes
};

// Reduce-scatter by all-to-all, the fixed-order sum, then (for an all-reduce) the all-gather.
class ReduceScatterThenGather final : public Work {
 public:
  ReduceScatterThenGather(const Tensor& send, Tensor shard_out, Tensor gathered, Tensor target, int ranks,
                          int64_t shard)
      : send_(send),
        shard_out_(std::move(shard_out)),
        gathered_(std::move(gathered)),
        target_(std::move(target)),
        ranks_(ranks),
        shard_(shard) {
    received_ = Tensor::empty({int64_t(ranks) * shard}, send.dtype());
    const int bytes = count_of(shard * int64_t(dtype_size(send.dtype())), "reduce_scatter_sum");
    check_mpi(MPI_Ialltoall(send_.raw_data(), bytes, MPI_BYTE, received_.raw_data(), bytes, MPI_BYTE,
                            MPI_COMM_WORLD, &request_),
              "MPI_Ialltoall");
  }
  void wait() override {
    if (done_) return;
    done_ = true;
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    sum_shards_of(received_, ranks_, shard_, shard_out_.raw_data());
    if (!gathered_.defined()) return;
    const int bytes = count_of(shard_ * int64_t(dtype_size(send_.dtype())), "all_reduce_sum");
    check_mpi(MPI_Allgather(shard_out_.raw_data(), bytes, MPI_BYTE, gathered_.raw_data(), bytes, MPI_BYTE,
                            MPI_COMM_WORLD),
              "MPI_Allgather");
    if (gathered_.raw_data() != target_.raw_data())  // padded: the target's part of the gathered shards
      std::memcpy(target_.raw_data(), gathered_.raw_data(),
                  size_t(target_.numel()) * dtype_size(target_.dtype()));
  }

 private:
  Tensor send_, shard_out_, gathered_, target_, received_;
  int ranks_;
  int64_t shard_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
};

class MpiWorld final : public Communicator {
 public:
  MpiWorld() {
    ensure_mpi();
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
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
    return std::make_unique<ReduceScatterThenGather>(send, Tensor::empty({shard}, t.dtype()), gathered, t,
                                                     size_, shard);
  }
  std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& in, Tensor& out) override {
    check_reduce_scatter(in, out, size_);
    return std::make_unique<ReduceScatterThenGather>(in, out, Tensor(), Tensor(), size_, out.numel());
  }
  std::unique_ptr<Work> start_all_gather(const Tensor& in, Tensor& out) override {
    check_all_gather(in, out, size_);
    auto work = std::make_unique<Request>(std::vector<Tensor>{in, out});
    const int bytes = count_of(in.numel() * int64_t(dtype_size(in.dtype())), "all_gather");
    check_mpi(MPI_Iallgather(in.raw_data(), bytes, MPI_BYTE, out.raw_data(), bytes, MPI_BYTE, MPI_COMM_WORLD,
                             &work->request),
              "MPI_Iallgather");
    return work;
  }
  std::unique_ptr<Work> start_broadcast(Tensor& t, int root) override {
    check_broadcast(t, root, size_);
    auto work = std::make_unique<Request>(std::vector<Tensor>{t});
    const int bytes = count_of(t.numel() * int64_t(dtype_size(t.dtype())), "broadcast");
    check_mpi(MPI_Ibcast(t.raw_data(), bytes, MPI_BYTE, root, MPI_COMM_WORLD, &work->request), "MPI_Ibcast");
    return work;
  }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> mpi_world() {
  return std::make_unique<MpiWorld>();
}
bool built_with_mpi() {
  return true;
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

#endif

}  // namespace dew::parallel
