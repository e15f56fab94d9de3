// `dew bench data`: the data chain on the Brown corpus — records/s and tokens/s per stage, and the
// chain's time (text source → tokenize → pack → batch) against the tokenizer alone encoding the same
// lines in the same run. A table, then one JSON line.
#pragma once

#include <string>

namespace dew::bench {

struct DataBenchOptions {
  std::string tokenizer;  // default: Llama 3's from tools/tokenizer-oracle
  int64_t T = 1024, batch = 8;
  int reps = 5;  // each figure is the best of this many runs
};
int run_data_bench(const DataBenchOptions& options);

}  // namespace dew::bench
