// The NCCL communicator (nccl_world, parallel.h): collectives between CUDA devices, one per rank, over
// NCCL's data movement — grouped send/receive as the all-to-all, all-gather, broadcast — with every sum
// Dew's own fixed tree on the device (nccl_tree_sum.cu), so its bits equal the MPI communicator's and
// one process's. MPI (launched_world) starts it: rank 0's NCCL id is broadcast to the others. Work runs
// on the device's compute stream; wait() polls a CUDA event, bounded by the timeout (NOTE [bounded
// waits], mpi.cc). Without CUDA and NCCL in the build, nccl_world refuses by name.
#include <dew/error.h>
#include <dew/parallel.h>
#include <dew/runtime.h>

#include "parallel/checks.h"

#if DEW_WITH_NCCL
#include <nccl.h>

#include <algorithm>
#include <cstring>

#include "cuda/launch.h"
#include "parallel/bounded_wait.h"
#include "parallel/nccl_tree_sum.h"
#endif

namespace dew::parallel {

#if DEW_WITH_NCCL
namespace {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  fail("[nccl] {} failed: {}", what, ncclGetErrorString(rc));
}

ncclDataType_t nccl_type(DType dtype) {
  return dtype == DType::f64 ? ncclFloat64 : ncclFloat32;
}

// A collective enqueued on the stream: done when its event is; waited for within the timeout.
class StreamWork final : public Work {
 public:
  StreamWork(cudaStream_t stream, std::vector<Tensor> keep, double timeout_s, int rank, const char* what,
             WaitClock& clock)
      : keep_(std::move(keep)), timeout_s_(timeout_s), rank_(rank), what_(what), clock_(clock) {
    DEW_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    DEW_CUDA_CHECK(cudaEventRecord(event_, stream));
  }
  ~StreamWork() override {
    cudaEventSynchronize(event_);  // the tensors it keeps stay alive until the device is done with them
    cudaEventDestroy(event_);
  }
  bool test() override { return cudaEventQuery(event_) == cudaSuccess; }
  void wait() override {
    wait_bounded([this] { return test(); }, timeout_s_, rank_, what_, clock_);
  }

 private:
  std::vector<Tensor> keep_;
  cudaEvent_t event_ = nullptr;
  double timeout_s_;
  int rank_;
  const char* what_;
  WaitClock& clock_;
};

class NcclWorld final : public Communicator {
 public:
  explicit NcclWorld(int device) : bootstrap_(launched_world()), device_(device) {
    rank_ = bootstrap_->rank(), size_ = bootstrap_->size();
    DEW_REQUIRE(size_ <= kMaxDeviceTreeParts, "[nccl] {} ranks; the device's fixed-tree sum takes at most {}",
                size_, kMaxDeviceTreeParts);
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    Tensor bytes = Tensor::empty({int64_t(sizeof(id))}, DType::u8);
    std::memcpy(bytes.raw_data(), &id, sizeof(id));
    bootstrap_->broadcast(bytes, 0);
    std::memcpy(&id, bytes.raw_data(), sizeof(id));
    cuda::use_device(device_);
    check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    stream_ = cuda::stream_of(device_);
  }
  ~NcclWorld() override {
    if (comm_) ncclCommDestroy(comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  void set_timeout(double seconds) override {
    timeout_s_ = seconds;
    bootstrap_->set_timeout(seconds);
  }
  double seconds_waiting() const override {
    return std::max(clock_.seconds_waiting(), bootstrap_->seconds_waiting());
  }

  std::unique_ptr<Work> start_all_reduce_sum(Tensor& t) override {
    check_summed("all_reduce_sum", t, device());
    const int64_t n = t.numel(), shard = (n + size_ - 1) / size_, padded = shard * size_;
    Tensor send = t;
    if (padded != n) {  // zeros past the end, so that every message is the same size
      send = Tensor::zeros({padded}, t.dtype(), t.device());
      send.slice(0, 0, n).copy_from(t.reshape({n}));
    }
    cuda::use_device(device_);
    const Tensor summed = exchange_and_sum(send, shard);
    Tensor gathered = padded == n ? t.reshape({n}) : Tensor::empty({padded}, t.dtype(), t.device());
    check_nccl(ncclAllGather(summed.raw_data(), gathered.raw_data(), size_t(shard), nccl_type(t.dtype()),
                             comm_, stream_),
               "ncclAllGather");
    if (padded != n) t.reshape({n}).copy_from(gathered.slice(0, 0, n));
    return work({send, summed, gathered, t}, "an all-reduce");
  }
  std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& in, Tensor& out) override {
    check_reduce_scatter(in, out, size_, device());
    cuda::use_device(device_);
    const Tensor summed = exchange_and_sum(in, out.numel());
    out.copy_from(summed.reshape(out.shape()));
    return work({in, summed, out}, "a reduce-scatter");
  }
  std::unique_ptr<Work> start_all_gather(const Tensor& in, Tensor& out) override {
    check_all_gather(in, out, size_, device());
    cuda::use_device(device_);
    check_nccl(ncclAllGather(in.raw_data(), out.raw_data(), size_t(in.numel()) * dtype_size(in.dtype()),
                             ncclUint8, comm_, stream_),
               "ncclAllGather");
    return work({in, out}, "an all-gather");
  }
  std::unique_ptr<Work> start_broadcast(Tensor& t, int root) override {
    check_broadcast(t, root, size_, device());
    cuda::use_device(device_);
    check_nccl(ncclBroadcast(t.raw_data(), t.raw_data(), size_t(t.numel()) * dtype_size(t.dtype()), ncclUint8,
                             root, comm_, stream_),
               "ncclBroadcast");
    return work({t}, "a broadcast");
  }
  std::unique_ptr<Work> start_reduce_sum(const Tensor& in, Tensor& out, int root) override {
    check_reduce(in, out, root, rank_, size_, device());
    cuda::use_device(device_);
    const int64_t n = in.numel();
    const size_t bytes = size_t(n) * dtype_size(in.dtype());
    if (rank_ != root) {
      check_nccl(ncclSend(in.raw_data(), size_t(n), nccl_type(in.dtype()), root, comm_, stream_), "ncclSend");
      return work({in}, "a reduction to one rank");
    }
    Tensor parts = Tensor::empty({int64_t(size_) * n}, in.dtype(), in.device());
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r)
      if (r != rank_)
        check_nccl(ncclRecv(static_cast<char*>(parts.raw_data()) + size_t(r) * bytes, size_t(n),
                            nccl_type(in.dtype()), r, comm_, stream_),
                   "ncclRecv");
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    parts.slice(0, int64_t(rank_) * n, int64_t(rank_ + 1) * n).copy_from(in.reshape({n}));
    fixed_tree_sum_on_device(parts.raw_data(), size_, n, out.raw_data(), in.dtype() == DType::f64, stream_);
    return work({in, parts, out}, "a reduction to one rank");
  }
  void barrier() override {
    cuda::synchronize(device_);
    bootstrap_->barrier();
  }
  std::unique_ptr<Communicator> split(int, int) override {
    fail(
        "[nccl] the NCCL communicator does not split into groups yet (tensor parallelism runs on CPUs, "
        "over MPI); use mpi_world()");
  }

 private:
  Device device() const { return Device::cuda(device_); }
  // Every rank's shard r of `send` (P shards of `shard` values) to rank r by grouped send/receive, then
  // this rank's P copies added in the fixed order: its shard of the sum (shard values, on the device).
  Tensor exchange_and_sum(const Tensor& send, int64_t shard) {
    const size_t bytes = size_t(shard) * dtype_size(send.dtype());
    Tensor received = Tensor::empty({int64_t(size_) * shard}, send.dtype(), send.device());
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      check_nccl(ncclSend(static_cast<const char*>(send.raw_data()) + size_t(r) * bytes, size_t(shard),
                          nccl_type(send.dtype()), r, comm_, stream_),
                 "ncclSend");
      check_nccl(ncclRecv(static_cast<char*>(received.raw_data()) + size_t(r) * bytes, size_t(shard),
                          nccl_type(send.dtype()), r, comm_, stream_),
                 "ncclRecv");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    Tensor summed = Tensor::empty({shard}, send.dtype(), send.device());
    fixed_tree_sum_on_device(received.raw_data(), size_, shard, summed.raw_data(), send.dtype() == DType::f64,
                             stream_);
    return summed;  // `received` is freed to the allocator, whose reuse follows the stream
  }
  std::unique_ptr<Work> work(std::vector<Tensor> keep, const char* what) {
    return std::make_unique<StreamWork>(stream_, std::move(keep), timeout_s_, rank_, what, clock_);
  }

  std::unique_ptr<Communicator> bootstrap_;
  int device_, rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  double timeout_s_ = 0;
  WaitClock clock_;
};

}  // namespace

std::unique_ptr<Communicator> nccl_world(int device) {
  DEW_REQUIRE(device >= 0 && device < cuda_device_count(), "[nccl] cuda:{}; this machine has {} CUDA devices",
              device, cuda_device_count());
  return std::make_unique<NcclWorld>(device);
}
bool built_with_nccl() {
  return true;
}

#else

std::unique_ptr<Communicator> nccl_world(int device) {
  fail(
      "[nccl] cuda:{}: this build of Dew has no NCCL communicator; it needs the CUDA toolkit with NCCL and "
      "MPI "
      "(libopenmpi-dev) at configure time",
      device);
}
bool built_with_nccl() {
  return false;
}

#endif

}  // namespace dew::parallel
