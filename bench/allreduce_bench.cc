// `dew bench allreduce` (allreduce_bench.h).
#include "allreduce_bench.h"

#include <dew/error.h>
#include <dew/parallel.h>
#include <dew/runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

namespace dew::bench {

int run_allreduce_bench(const AllReduceBenchOptions& o) {
  DEW_REQUIRE(o.mib > 0 && o.bucket_mib > 0 && o.rounds >= 1,
              "[bench allreduce] --mib {}, --bucket-mib {}, --rounds {}; expected positive sizes and rounds",
              o.mib, o.bucket_mib, o.rounds);
  const std::unique_ptr<parallel::Communicator> world = parallel::launched_world();
  const int64_t total = int64_t(o.mib * double(1 << 20) / 4),
                bucket = int64_t(o.bucket_mib * double(1 << 20) / 4);
  std::vector<Tensor> buckets;
  for (int64_t at = 0; at < total; at += bucket) {
    Tensor t = Tensor::empty({std::min(bucket, total - at)}, DType::f32);
    fill_normal(t, {1, uint64_t(world->rank()), uint64_t(at)}, 0, 1);
    buckets.push_back(t);
  }
  std::vector<double> seconds;
  for (int round = 0; round <= o.rounds; ++round) {  // round 0 warms up
    world->barrier();
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<parallel::Work>> works;
    for (Tensor& t : buckets) works.push_back(world->start_all_reduce_sum(t));
    for (auto& w : works) w->wait();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (round > 0) seconds.push_back(s);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const int P = world->size();
  const double bytes = double(total) * 4, bus = 2.0 * (P - 1) / P * bytes / median;
  if (world->rank() != 0) return 0;
  fmt::print(
      "all-reduce of {:.1f} MiB f32 in {} buckets over {} ranks ({}), {} threads each: median {:.4f} s "
      "({:.4f}-{:.4f}), bus bandwidth {:.2f} GB/s\n",
      o.mib, buckets.size(), P, world->backend(), num_threads(), median, seconds.front(), seconds.back(),
      bus / 1e9);
  fmt::print("{}\n", nlohmann::json{{"bench", "allreduce"},
                                    {"ranks", P},
                                    {"bytes", int64_t(bytes)},
                                    {"buckets", buckets.size()},
                                    {"median_s", median},
                                    {"min_s", seconds.front()},
                                    {"max_s", seconds.back()},
                                    {"bus_bandwidth_gb_s", bus / 1e9}}
                         .dump());
  return 0;
}

}  // namespace dew::bench
