// load_inference_model: finite weights are checked by one squared_norm per tensor, which is finite
// exactly when every value is (squares of f32, bf16 and f16 values cannot overflow a double).
#include "cli/inference_model.h"

#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/train.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli/commands.h"
#include "io/files.h"
#include "io/json.h"

namespace dew::cli {

InferenceModel load_inference_model(const std::string& model_or_run, const std::string& dtype) {
  const std::string directory =
      train::model_directory(model_or_run);  // a run directory: its newest checkpoint
  CausalLM model = CausalLM::load(directory, dtype.empty() ? std::optional<DType>() : parse_dtype(dtype));
  NoGrad no_grad;
  std::vector<std::string> broken;
  for (const auto& [name, tensor] : model.parameters())
    if (is_floating(tensor.dtype()) && !std::isfinite(squared_norm(tensor).to_f64_vector()[0]))
      broken.push_back(name);
  DEW_REQUIRE(
      broken.empty(),
      "{} holds NaN or infinite weights in {}{}; every output would be NaN. Load an earlier checkpoint, "
      "or check how these weights were made",
      directory, broken.front(),
      broken.size() > 1 ? fmt::format(" and {} other tensors", broken.size() - 1) : std::string());
  model.pack_projections();
  return {directory, std::move(model)};
}

Tokenizer load_inference_tokenizer(const InferenceModel& loaded) {
  Tokenizer tokenizer = Tokenizer::load(loaded.directory);
  const int64_t vocab = loaded.model.config().vocab_size, ids = tokenizer.vocab_size();
  DEW_REQUIRE(
      ids <= vocab,
      "{}: config.json's vocab_size {} is smaller than the tokenizer's {} ids; expected a tokenizer made "
      "for this model",
      loaded.directory, vocab, ids);
  return tokenizer;
}

namespace {

nlohmann::json read_json_if_present(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) return nlohmann::json::object();
  nlohmann::json json = parse_json(read_text_file(path.string()), path.string());
  DEW_REQUIRE(json.is_object(), "{}: expected a JSON object", path.string());
  return json;
}

// eos_token_id is an integer or a list of them.
void add_eos_ids(const nlohmann::json& json, const std::string& source, std::vector<int64_t>& eos) {
  if (!json.contains("eos_token_id") || json["eos_token_id"].is_null()) return;
  const nlohmann::json& value = json["eos_token_id"];
  for (const auto& id : value.is_array() ? value : nlohmann::json::array({value})) {
    DEW_REQUIRE(id.is_number_integer(), "{}: eos_token_id holds {}; expected integers", source, id.dump());
    eos.push_back(id.get<int64_t>());
  }
}

}  // namespace

GenerationDefaults generation_defaults(const InferenceModel& loaded, const Tokenizer& tokenizer) {
  namespace fs = std::filesystem;
  const fs::path generation_path = fs::path(loaded.directory) / "generation_config.json";
  const nlohmann::json generation = read_json_if_present(generation_path);
  const JsonFields g{generation, generation_path.string()};
  GenerationDefaults d;
  SamplingOptions& s = d.sampling;
  s.temperature = g.flag_or("do_sample", false) ? g.number_or("temperature", 1.0) : 0.0;
  s.top_k = g.size_or("top_k", 50);
  s.top_p = g.number_or("top_p", 1.0);
  s.min_p = g.number_or("min_p", 0.0);
  s.repetition_penalty = g.number_or("repetition_penalty", 1.0);
  add_eos_ids(generation, generation_path.string(), d.eos_ids);
  add_eos_ids(read_json_if_present(fs::path(loaded.directory) / "config.json"), "config.json", d.eos_ids);
  if (tokenizer.eos_id()) d.eos_ids.push_back(*tokenizer.eos_id());
  return d;
}

}  // namespace dew::cli
