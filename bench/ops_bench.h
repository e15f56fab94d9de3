// `dew bench ops`: every op's cases tagged "bench", each eligible implementation, against this
// machine's ceilings measured in the same run. A table for people, one JSON line last.
#pragma once

#include <string>

namespace dew::bench {

struct OpsBenchOptions {
  std::string op, implementation, dtype;
  int reps = 5;
  double min_ms = 20;  // each row timed over this many ms of calls at least (NOTE [timing short calls])
};
int run_ops_bench(const OpsBenchOptions& options);

}  // namespace dew::bench
