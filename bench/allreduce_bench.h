// `dew bench allreduce`, run as ranks (`dew launch -n 2 -- bench allreduce`): Dew's exact all-reduce
// (the communicator's fixed-order sum) of a gradient-sized buffer in data parallelism's buckets, all
// started and then waited for, as after a backward with nothing to hide them behind. Median seconds
// and bus bandwidth (2 (P - 1) / P x bytes / seconds, nccl-tests' convention). A table, then one
// JSON line (rank 0).
#pragma once

#include <cstdint>

namespace dew::bench {

struct AllReduceBenchOptions {
  double mib = 48;        // f32 gradients reduced per round
  double bucket_mib = 8;  // per all-reduce ([parallel] bucket_mib)
  int rounds = 10;
};
int run_allreduce_bench(const AllReduceBenchOptions& options);

}  // namespace dew::bench
