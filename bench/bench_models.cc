// bench_model_json: the benchmarks' model names to config.json text.
#include "bench_models.h"

#include <dew/error.h>
#include <dew/train.h>

#include <filesystem>
#include <sstream>

#include "io/toml.h"

namespace dew::bench {
namespace {

constexpr const char* kGpt2Small =
    R"({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024})";
// Qwen3-0.6B's config.json (its sizes, grouped KV heads, q/k norms, tied embeddings).
constexpr const char* kQwen3_0_6B =
    R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
        "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000,
        "tie_word_embeddings": true})";

}  // namespace

std::string bench_model_json(const std::string& model, const char* bench) {
  if (model == "gpt2-124m") return kGpt2Small;
  if (model == "qwen3-0.6b") return kQwen3_0_6B;
  DEW_REQUIRE(model == "default" || model.ends_with(".toml"),
              "[bench {}] model \"{}\"; expected gpt2-124m, qwen3-0.6b, default or a TOML config", bench,
              model);
  const std::string path =
      model == "default" ? std::string(DEW_SOURCE_DIR) + "/examples/default.toml" : model;
  // A benchmark needs the model's sizes only: a config whose tokenizer is not trained yet (the
  // default job's before its first run) takes the vocabulary its [tokenizer] table will train.
  const toml::table root = load_toml(path);
  const std::optional<std::string_view> tokenizer = root.at_path("tokenizer.path").value<std::string_view>();
  const std::optional<int64_t> planned = root.at_path("tokenizer.vocab_size").value<int64_t>();
  const toml::table* sizes = root["model"].as_table();
  if (tokenizer && planned && sizes && !sizes->contains("vocab_size") && !root.at_path("train.tokenizer") &&
      !std::filesystem::exists(std::filesystem::path(path).parent_path() / *tokenizer)) {
    toml::table fields = *sizes;
    fields.insert("vocab_size", *planned);
    std::ostringstream json;
    json << toml::json_formatter{fields};
    return json.str();
  }
  return train::trainer_config_from_toml(path).model_json;
}

}  // namespace dew::bench
