// `dew bench decode`: prefill and decode tokens per second of a Llama-shaped model (~125M parameters
// by default) at f32 and bf16 weights, batch 1, and the weight bytes decode reads per second against
// this machine's triad bandwidth measured in the same run. A table, then one JSON line.
#pragma once

#include <cstdint>

namespace dew::bench {

struct DecodeBenchOptions {
  int64_t layers = 12, hidden = 768, prompt = 512, new_tokens = 32;
  bool pytorch = true;  // also run PyTorch on the same checkpoint when Debian's python3-torch is there
};
int run_decode_bench(const DecodeBenchOptions& options);

}  // namespace dew::bench
