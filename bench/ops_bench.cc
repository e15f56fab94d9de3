// The op benchmark: min/median/max seconds per call, then the rate against the ceiling that bounds
// it: GEMM-shaped ops against the library's own sgemm on the same shape, ops that count FLOPs
// (attention) against the sgemm 2048^3 rate, everything else against STREAM triad bandwidth (bytes = inputs +
// outputs, a lower bound on traffic). The host's bandwidth drifts from minute to minute (docs/perf.md),
// so triad is measured again after each row that counts against it, and the row's fraction is of the
// better of that and the one before it (the previous such row's, or the header's, the run's first).
#include "ops_bench.h"

#include <dew/runtime.h>

#include <algorithm>

#include "ceilings.h"
#include "gate/catalog.h"

namespace dew::bench {

int run_ops_bench(const OpsBenchOptions& o) {
  if (!o.op.empty() && !gate::find_op(o.op)) fail("--op {} is not an operation (see `dew ops`)", o.op);
  DEW_REQUIRE(o.reps >= 1, "--reps {}: expected at least 1", o.reps);
  DEW_REQUIRE(o.min_ms >= 0, "--min-ms {}: expected 0 or more", o.min_ms);
  const double triad = triad_gb_per_s();
  const double peak = sgemm_gflop_per_s();
  fmt::print(
      "machine: {} threads, avx2={} avx512f={}; ceilings: triad {:.1f} GB/s, sgemm 2048^3 {:.1f} GFLOP/s\n",
      num_threads(), cpu_features().avx2, cpu_features().avx512f, triad, peak);
  fmt::print("{:<18} {:<11} {:<5} {:<18} {:>24} {:>10} {:>9}  {}\n", "op", "impl", "dtype", "case",
             "ms min/med/max", "rate", "of ceil", "ceiling");
  std::string json = fmt::format(
      "{{\"bench\":\"ops\",\"threads\":{},\"triad_gb_s\":{:.2f},\"sgemm_gflop_s\":{:.2f},\"rows\":[",
      num_threads(), triad, peak);
  bool first = true;
  TriadProbe triad_probe;  // filled once: each measurement beside a row times only its passes
  // sgemm 2048^3 is not measured again beside rows: right after one, oneDNN's OpenMP threads share the
  // cores with the pool's still-spinning workers and read about half the rate.
  double previous_triad = triad;
  const auto triad_now = [&] {
    double best = 0;
    for (int r = 0; r < 3; ++r) best = std::max(best, triad_probe.gb_per_s());
    return best;
  };
  for (const auto& e : gate::catalog()) {
    if (!o.op.empty() && e.name != o.op) continue;
    for (const auto& c : e.cases) {
      if (!c.has_tag("bench")) continue;
      for (DType t : c.dtypes) {
        if (!o.dtype.empty() && dtype_name(t) != o.dtype) continue;
        for (const auto& impl : e.implementations) {
          if (!o.implementation.empty() && impl.name != o.implementation) continue;
          gate::BenchTiming b = e.bench(impl.name, c.name, t, o.reps, o.min_ms * 1e-3);
          if (!b.ran) continue;
          std::sort(b.seconds.begin(), b.seconds.end());
          const double med = b.seconds[b.seconds.size() / 2];
          double rate, fraction;
          std::string unit, ceiling;
          if (!b.gemm.empty()) {
            double direct =
                sgemm_seconds(b.gemm[0], b.gemm[1], b.gemm[2], b.gemm[4] != 0, o.reps) * double(b.gemm[3]);
            rate = b.flops / med * 1e-9;
            fraction = direct / med;
            unit = "GFLOP/s";
            ceiling = fmt::format("sgemm direct {:.1f} GFLOP/s", b.flops / direct * 1e-9);
          } else if (b.flops > 0) {  // against the header's sgemm (see previous_triad's comment)
            rate = b.flops / med * 1e-9;
            fraction = rate / peak;
            unit = "GFLOP/s";
            ceiling = "sgemm 2048^3";
          } else {
            const double triad_after = triad_now(), row_triad = std::max(previous_triad, triad_after);
            previous_triad = triad_after;
            rate = b.bytes / med * 1e-9;
            fraction = rate / row_triad;
            unit = "GB/s";
            ceiling = fmt::format("triad beside, {:.1f} GB/s", row_triad);
          }
          fmt::print("{:<18} {:<11} {:<5} {:<18} {:>7.3f}/{:>7.3f}/{:>7.3f} {:>6.1f} {:<7} {:>5.0f}%  {}\n",
                     e.name, impl.name, dtype_name(t), c.name, b.seconds.front() * 1e3, med * 1e3,
                     b.seconds.back() * 1e3, rate, unit, 100 * fraction, ceiling);
          json += fmt::format(
              "{}{{\"op\":\"{}\",\"impl\":\"{}\",\"dtype\":\"{}\",\"case\":\"{}\",\"median_ms\":{:.4f},"
              "\"calls\":{},\"rate\":{:.2f},\"unit\":\"{}\",\"fraction_of_ceiling\":{:.3f}}}",
              first ? "" : ",", e.name, impl.name, dtype_name(t), c.name, med * 1e3, b.seconds.size(), rate,
              unit, fraction);
          first = false;
        }
      }
    }
  }
  fmt::print("{}]}}\n", json);
  return 0;
}

}  // namespace dew::bench
