// load_inference_model: finite weights are checked by one squared_norm per tensor, which is finite
// exactly when every value is (squares of f32, bf16 and f16 values cannot overflow a double).
#include "cli/inference_model.h"

#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/train.h>

#include <cmath>
#include <optional>
#include <vector>

#include "cli/commands.h"

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

}  // namespace dew::cli
