// `dew export MODEL --gguf FILE [--dtype DTYPE]`: a model directory or a run's newest checkpoint, with the
// tokenizer beside it, written as one GGUF file for llama.cpp and the tools built on it (models.h's
// save_gguf says what it writes and what it refuses).
#include <dew/models.h>
#include <fmt/core.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/inference_model.h"

namespace dew::cli {
namespace {

struct ExportOptions {
  std::string model, gguf, dtype = "bf16";
};

int run_export(const ExportOptions& o) {
  const DType dtype = parse_dtype(o.dtype);
  const InferenceModel loaded = load_inference_model(o.model, "");
  const Tokenizer tokenizer = load_inference_tokenizer(loaded);
  save_gguf(loaded.model, tokenizer, o.gguf, dtype);
  fmt::print("wrote {} ({} parameters, {} weights, {:.1f} MB) from {}\n", o.gguf,
             loaded.model.parameter_count(), dtype_name(dtype),
             double(std::filesystem::file_size(o.gguf)) / 1e6, loaded.directory);
  return 0;
}

}  // namespace

void add_export(CLI::App& app, int& status) {
  auto* command = app.add_subcommand(
      "export",
      "write a llama, mistral, qwen2 or qwen3 model and its tokenizer as a GGUF file for llama.cpp");
  ExportOptions& o = runs(command, status, run_export);
  command->add_option("model", o.model, "a model directory, or a run directory (its newest checkpoint)")
      ->required();
  command->add_option("--gguf", o.gguf, "the GGUF file to write")->required();
  command->add_option("--dtype", o.dtype, "the matrices' dtype: f32, f16 or bf16 (norms stay f32)")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
}

}  // namespace dew::cli
