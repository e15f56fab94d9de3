// A Hugging Face model directory for command-line tests: a random model of `config_json`'s family
// with a byte-level tokenizer of its vocabulary (one token per byte, ids = byte values, then
// <|endoftext|> = 256, the end-of-sequence token).
#pragma once

#include <dew/models.h>
#include <dew/tokenizer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dew::testing {

inline constexpr const char* kByteLlama =
    R"({"model_type":"llama","vocab_size":257,"hidden_size":32,"intermediate_size":48,"num_hidden_layers":1,
        "num_attention_heads":2,"num_key_value_heads":1,"max_position_embeddings":64})";

inline std::string model_with_tokenizer(const std::string& name,
                                        const std::string& config_json = kByteLlama) {
  const std::string dir = ::testing::TempDir() + name;
  std::filesystem::remove_all(dir);
  CausalLM::init(parse_model_config(config_json, "config"), DType::f32, 5).save(dir);
  BpeTrainOptions options;
  options.min_frequency = 1 << 30;  // bytes only
  options.special_tokens = {"<|endoftext|>"};
  std::ofstream(dir + "/tokenizer.json") << train_byte_level_bpe({"x"}, options);
  std::ofstream(dir + "/tokenizer_config.json") << R"({"eos_token": "<|endoftext|>"})";
  return dir;
}

// The library's greedy continuation of `prompt` by the model in `dir` (such a directory): its ids, the
// end-of-sequence token left out — what `dew generate` should print.
inline std::vector<int64_t> greedy_ids(const std::string& dir, const std::string& prompt,
                                       int64_t max_new_tokens) {
  const CausalLM model = CausalLM::load(dir);
  GenerationOptions options;
  options.max_new_tokens = max_new_tokens;
  options.sampling.temperature = 0;
  options.eos_ids = {256};
  const std::vector<std::vector<int64_t>> ids =
      generate(model, {Tokenizer::load(dir).encode(prompt)}, options);
  std::vector<int64_t> shown;
  for (int64_t id : ids[0])
    if (id != 256) shown.push_back(id);
  return shown;
}

}  // namespace dew::testing
