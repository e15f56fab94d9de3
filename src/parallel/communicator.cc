// The fixed order of every sum, the single-process communicator, and the checks every backend makes
// of a collective's tensors (parallel/checks.h).
#include <dew/error.h>
#include <dew/parallel.h>
#include <dew/runtime.h>

#include "parallel/bounded_wait.h"
#include "parallel/checks.h"

#include <algorithm>
#include <cstdlib>

namespace dew::parallel {
namespace {

// NOTE [the fixed tree]: level by level, adjacent pairs are added — (p0 + p1), (p2 + p3), ... — an odd
// last part carried up unchanged, until one is left. The order depends on P alone; each element is
// added in the same order whatever the chunking, so the result is the same bits on every rank.
template <class T>
void tree_sum(const std::vector<const T*>& parts, T* out, int64_t n) {
  const int64_t P = int64_t(parts.size());
  DEW_REQUIRE(P >= 1, "[parallel] a sum of no parts; expected at least one");
  constexpr int64_t kChunk = 2048;
  parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t c0, int64_t c1) {
    std::vector<T> level(size_t(P * kChunk));
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t at = c * kChunk, m = std::min(kChunk, n - at);
      for (int64_t p = 0; p < P; ++p)
        std::copy(parts[size_t(p)] + at, parts[size_t(p)] + at + m, &level[size_t(p * kChunk)]);
      for (int64_t width = P; width > 1; width = (width + 1) / 2)
        for (int64_t k = 0; k < width / 2; ++k) {
          T* dst = &level[size_t(k * kChunk)];
          const T *a = &level[size_t(2 * k * kChunk)], *b = &level[size_t((2 * k + 1) * kChunk)];
          for (int64_t i = 0; i < m; ++i) dst[i] = a[i] + b[i];
          if (k == width / 2 - 1 && width % 2)  // the odd last part moves up to position width / 2
            std::copy_n(&level[size_t((width - 1) * kChunk)], m, &level[size_t((width / 2) * kChunk)]);
        }
      std::copy_n(level.data(), m, out + at);
    }
  });
}

class Done final : public Work {
 public:
  void wait() override {}
  bool test() override { return true; }
};

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  void set_timeout(double) override {}
  double seconds_waiting() const override { return 0; }
  std::unique_ptr<Work> start_all_reduce_sum(Tensor& t) override {
    check_summed("all_reduce_sum", t);
    return std::make_unique<Done>();
  }
  std::unique_ptr<Work> start_reduce_scatter_sum(const Tensor& in, Tensor& out) override {
    check_reduce_scatter(in, out, 1);
    out.copy_from(in.reshape(out.shape()));
    return std::make_unique<Done>();
  }
  std::unique_ptr<Work> start_all_gather(const Tensor& in, Tensor& out) override {
    check_all_gather(in, out, 1);
    out.copy_from(in.reshape(out.shape()));
    return std::make_unique<Done>();
  }
  std::unique_ptr<Work> start_broadcast(Tensor& t, int root) override {
    check_broadcast(t, root, 1);
    return std::make_unique<Done>();
  }
  std::unique_ptr<Work> start_reduce_sum(const Tensor& in, Tensor& out, int root) override {
    check_reduce(in, out, root, 0, 1);
    if (out.raw_data() != in.raw_data()) out.copy_from(in);
    return std::make_unique<Done>();
  }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int color, int) override {
    DEW_REQUIRE(color >= 0, "[parallel] split color {}; expected >= 0", color);
    return std::make_unique<SingleProcess>();
  }
};

}  // namespace

void fixed_tree_sum(const std::vector<const float*>& parts, float* out, int64_t n) {
  tree_sum(parts, out, n);
}
void fixed_tree_sum(const std::vector<const double*>& parts, double* out, int64_t n) {
  tree_sum(parts, out, n);
}

std::unique_ptr<Communicator> single_process() {
  return std::make_unique<SingleProcess>();
}

int launched_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* value = std::getenv(name)) return std::max(1, std::atoi(value));
  return 1;
}

std::unique_ptr<Communicator> launched_world() {
  if (launched_world_size() == 1) return single_process();
  DEW_REQUIRE(
      built_with_mpi(),
      "[parallel] started as one of {} ranks, but this build of Dew has no MPI; install libopenmpi-dev "
      "(tools/setup-debian.sh) and configure with DEW_MPI=AUTO or ON",
      launched_world_size());
  return mpi_world();
}

namespace {

// A contiguous tensor on the communicator's device: MPI moves host memory, NCCL that device's.
void check_placed(const char* collective, const Tensor& t, Device device) {
  DEW_REQUIRE(t.defined() && t.is_contiguous() && t.device() == device,
              "[{}] {}; expected a contiguous tensor on {}, the communicator's device", collective,
              t.defined() ? t.describe() : "an undefined tensor", device.str());
}

}  // namespace

void check_summed(const char* collective, const Tensor& t, Device device) {
  check_placed(collective, t, device);
  DEW_REQUIRE(t.dtype() == DType::f32 || t.dtype() == DType::f64,
              "[{}] {}; expected a contiguous f32 or f64 tensor (sums are Dew's own, in f32 or wider)",
              collective, t.describe());
}

void check_reduce_scatter(const Tensor& in, const Tensor& out, int ranks, Device device) {
  check_summed("reduce_scatter_sum", in, device);
  check_summed("reduce_scatter_sum", out, device);
  DEW_REQUIRE(out.dtype() == in.dtype() && in.numel() == int64_t(ranks) * out.numel(),
              "[reduce_scatter_sum] in {} and out {}; expected out of in's dtype and 1/{} of its elements",
              in.describe(), out.describe(), ranks);
}

void check_all_gather(const Tensor& in, const Tensor& out, int ranks, Device device) {
  check_placed("all_gather", in, device);
  check_placed("all_gather", out, device);
  DEW_REQUIRE(out.dtype() == in.dtype() && out.numel() == int64_t(ranks) * in.numel(),
              "[all_gather] in {} and out {}; expected tensors of one dtype, out {} times in's elements",
              in.describe(), out.describe(), ranks);
}

void check_reduce(const Tensor& in, const Tensor& out, int root, int rank, int ranks, Device device) {
  check_summed("reduce_sum", in, device);
  DEW_REQUIRE(root >= 0 && root < ranks, "[reduce_sum] root {}; expected a rank from 0 to {}", root,
              ranks - 1);
  if (rank != root) return;
  check_summed("reduce_sum", out, device);
  DEW_REQUIRE(out.dtype() == in.dtype() && out.numel() == in.numel(),
              "[reduce_sum] in {} and out {}; expected out of in's dtype and size on the root", in.describe(),
              out.describe());
}

void check_broadcast(const Tensor& t, int root, int ranks, Device device) {
  check_placed("broadcast", t, device);
  DEW_REQUIRE(root >= 0 && root < ranks, "[broadcast] root {}; expected a rank from 0 to {}", root,
              ranks - 1);
}

void timed_out(int rank, double waited, const char* what, double timeout_s) {
  throw CollectiveTimeout(
      fmt::format("[parallel] rank {} waited {:.0f} s in {} for the other ranks: one has stopped or hangs "
                  "([parallel] timeout_s = {:g})",
                  rank, waited, what, timeout_s));
}

}  // namespace dew::parallel
