// The models the benchmarks name: gpt2-124m, qwen3-0.6b, default (examples/default.toml's model) or a
// TOML config's [model]; as config.json text.
#pragma once

#include <string>

namespace dew::bench {

// Refuses an unknown name with `bench` (the command) in the message.
std::string bench_model_json(const std::string& model, const char* bench);

}  // namespace dew::bench
