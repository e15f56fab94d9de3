// `dew bench decode`: prefill and decode tokens per second of a Llama-shaped model (~125M parameters
// by default) at f32 and bf16 weights, batch 1, and the weight bytes decode reads per second against
// this machine's triad bandwidth measured in the same run; PyTorch's and llama.cpp's on the same weights
// where they are installed. A table, then one JSON line.
#pragma once

#include <cstdint>

namespace dew::bench {

struct DecodeBenchOptions {
  int64_t layers = 12, hidden = 768, prompt = 512, new_tokens = 32;
  bool pytorch = true;    // also run PyTorch on the same checkpoint when Debian's python3-torch is there
  bool llama_cpp = true;  // and llama.cpp on the same weights when tools/llama-cpp is installed
};
int run_decode_bench(const DecodeBenchOptions& options);

}  // namespace dew::bench
