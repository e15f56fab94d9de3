// The model `dew generate` and `dew score` run: a model directory, or a run directory's newest
// checkpoint, loaded in the dtype asked for, and refused when a weight is NaN or infinite (every output
// would be NaN).
#pragma once

#include <dew/models.h>
#include <dew/tokenizer.h>

#include <string>

namespace dew::cli {

struct InferenceModel {
  std::string directory;  // where the model and its tokenizer were read
  CausalLM model;
};

// `dtype` empty: the checkpoint's own.
InferenceModel load_inference_model(const std::string& model_or_run, const std::string& dtype);
// The tokenizer beside the model, refused when its ids run past the model's vocabulary (naming both).
Tokenizer load_inference_tokenizer(const InferenceModel& loaded);

// What generation_config.json says, as transformers reads it: sampling defaults (do_sample false:
// greedy; top_k 50 otherwise), and the end-of-sequence ids of it, config.json and the tokenizer.
struct GenerationDefaults {
  SamplingOptions sampling;
  std::vector<int64_t> eos_ids;
};
GenerationDefaults generation_defaults(const InferenceModel& loaded, const Tokenizer& tokenizer);

}  // namespace dew::cli
