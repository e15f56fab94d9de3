// Communication between processes (docs/parallel.md): a Communicator over a group of ranks with the
// collectives data-parallel and sharded training need, blocking and non-blocking. Every sum is exact
// in this sense: its result depends on neither timing nor the library's algorithms, because Dew adds
// the ranks' contributions itself, in one fixed order (fixed_tree_sum over ranks 0..P-1), after moving
// them with the library's plain data movement (all-to-all, all-gather, broadcast).
#pragma once

#include <dew/error.h>
#include <dew/tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace dew::parallel {

// A started collective; wait() completes it (once; later calls return at once). Its tensors must stay
// alive and untouched until then, and its communicator must outlive it.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  // Moves the collective on without blocking (MPI progresses only inside its calls); true once done.
  virtual bool test() = 0;
};

// A collective that waited past the communicator's timeout: another rank has stopped or hangs.
class CollectiveTimeout : public Error {
 public:
  using Error::Error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  // Every wait of a collective, a barrier included, gives up after `seconds` (0: never) with a
  // CollectiveTimeout naming this rank and the collective; the process should then abort_launched.
  virtual void set_timeout(double seconds) = 0;
  // How long this rank has been waiting in a collective (0 when it is not), for a watchdog on another
  // thread; safe to call concurrently with the collectives.
  virtual double seconds_waiting() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "single", "mpi" or "nccl"

  // In place: every rank ends with the sum over ranks of t (f32 or f64, contiguous, the same shape on
  // every rank), the same bits everywhere: fixed_tree_sum's order, element by element.
  virtual std::unique_ptr<Work> start_all_reduce_sum(Tensor& t) = 0;
  // in (P n) on every rank; out (n) on rank r: elements [r n, (r + 1) n) of the sum, fixed_tree_sum's.
  virtual std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& in, Tensor& out) = 0;
  // in (n) on every rank; out (P n): rank r's in at [r n, (r + 1) n), any dtype.
  virtual std::unique_ptr<Work> start_all_gather(const Tensor& in, Tensor& out) = 0;
  // t from rank `root` to every rank, in place, any dtype.
  virtual std::unique_ptr<Work> start_broadcast(Tensor& t, int root) = 0;
  // in (n) on every rank; on rank `root` only, out (n; may be in itself) = the sum over ranks of in,
  // fixed_tree_sum's order. The other ranks' out is not touched.
  virtual std::unique_ptr<Work> start_reduce_sum(const Tensor& in, Tensor& out, int root) = 0;
  virtual void barrier() = 0;
  // The ranks of this group with the same `color`, as a group of their own ranked by `key` (then by
  // rank here), as MPI_Comm_split makes it; every rank of this group calls it, in the same order as
  // its collectives. Tensor parallelism's 2-D grid: the tensor-parallel and the data-parallel groups.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  void all_reduce_sum(Tensor& t) { start_all_reduce_sum(t)->wait(); }
  void reduce_scatter_sum(const Tensor& in, Tensor& out) { start_reduce_scatter_sum(in, out)->wait(); }
  void all_gather(const Tensor& in, Tensor& out) { start_all_gather(in, out)->wait(); }
  void broadcast(Tensor& t, int root) { start_broadcast(t, root)->wait(); }
  void reduce_sum(const Tensor& in, Tensor& out, int root) { start_reduce_sum(in, out, root)->wait(); }
};

// One process alone (rank 0 of 1): every collective is a copy, or nothing.
std::unique_ptr<Communicator> single_process();
// MPI's world (MPI initialized on first use, finalized at exit): the ranks mpirun started. Refuses,
// naming DEW_MPI, in a build without MPI.
std::unique_ptr<Communicator> mpi_world();
bool built_with_mpi();
// NCCL between the ranks launched_world() holds, each on its CUDA device `device` (tensors there), with
// the same fixed-order sums; MPI (or this process alone) starts it. Refuses, by name, in a build
// without CUDA, NCCL and MPI.
std::unique_ptr<Communicator> nccl_world(int device);
bool built_with_nccl();
// The ranks this process was started among: mpi_world() when a launcher started it as one of several
// (mpirun's environment says so: OMPI_COMM_WORLD_SIZE, or PMI_SIZE for other MPIs), else
// single_process(). Refuses, naming DEW_MPI, when launched as several ranks by a build without MPI.
std::unique_ptr<Communicator> launched_world();
// The world size the launcher's environment announces (1 when none).
int launched_world_size();
// After an error in a process launched as one of several ranks: ends the whole job at once
// (MPI_Abort), rather than leaving the other ranks waiting in a collective or this one in
// MPI_Finalize. Returns when there is nothing to abort.
void abort_launched(int exit_code);

// The one order every sum takes: parts[0..P-1] (rank order) added as a balanced pairwise tree —
// (p0 + p1) + (p2 + p3), ... — element by element into out (n values; out may be parts[0]).
void fixed_tree_sum(const std::vector<const float*>& parts, float* out, int64_t n);
void fixed_tree_sum(const std::vector<const double*>& parts, double* out, int64_t n);

}  // namespace dew::parallel
