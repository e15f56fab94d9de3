// llama.cpp as the CPU inference peer (tools/llama-cpp: node-llama-cpp's prebuilt binaries, installed by
// tools/setup-debian.sh): a model written to GGUF by save_gguf, then prefill and greedy decode timed by
// llama.cpp itself, after a warm-up pass, at 1 and 2 threads (its best decode and its best prefill here).
#pragma once

#include <dew/models.h>

#include <string>
#include <vector>

namespace dew::bench {

struct LlamaCppSpeed {
  int threads = 0;
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
};

// Empty, with `why` set, when node or tools/llama-cpp is missing or llama.cpp failed.
std::vector<LlamaCppSpeed> llama_cpp_speed(const CausalLM& model, DType dtype, int64_t prompt,
                                           int64_t new_tokens, std::string& why);
std::string llama_cpp_version();  // "node-llama-cpp X.Y.Z", or "" when not installed

}  // namespace dew::bench
