// `dew bench autodiff`: what differentiation costs per op at tiny shapes, where the kernel is
// nothing and the framework is everything (small models live or die by it). A table, one JSON line.
#pragma once

namespace dew::bench {

struct AutodiffBenchOptions {
  int ops = 20000;  // ops per timed chain
  int reps = 5;
};
int run_autodiff_bench(const AutodiffBenchOptions& options);

}  // namespace dew::bench
