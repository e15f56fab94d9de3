// `dew bench serve`: the serving engine under 1, 8 and 32 concurrent requests (all submitted at once,
// distinct prompts, greedy unless a temperature is given, a fixed number of new tokens each): output
// tokens/s, time to first token
// and inter-token latency (p50/p99), the gain of batching over one request at a time, and single-request
// decode's weight bytes/s against the triad bandwidth measured in the same run. A table, then one JSON
// line. With --profile, each level's step time by op (and outside the ops) follows its row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dew::bench {

struct ServeBenchOptions {
  std::string model = "default";  // gpt2-124m, qwen3-0.6b, default or a TOML config
  std::string precision = "f32";  // the weights' and the KV cache's dtype: f32 or bf16
  int64_t prompt = 128, new_tokens = 64;
  std::vector<int64_t> concurrency = {1, 8, 32};
  bool batch_invariant = false;       // the engine's deterministic mode (NOTE [batch invariance])
  bool profile = false;               // each level's timed run under the op profile: time a step by op
  double temperature = 0, top_p = 1;  // each request's sampling (temperature 0: greedy)
};
int run_serve_bench(const ServeBenchOptions& options);

}  // namespace dew::bench
