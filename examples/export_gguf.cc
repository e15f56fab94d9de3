// Writes a small Llama-shaped model and a byte-level BPE trained on a few sentences as one GGUF file,
// the file llama.cpp (and the tools built on it) load — the call behind `dew export --gguf`.
// Usage: export_gguf [FILE.gguf] (default: a file under /tmp).
#include <dew/models.h>
#include <dew/tokenizer.h>
#include <fmt/core.h>

#include <filesystem>

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "dew_example.gguf").string();
  const std::vector<std::string_view> text = {"The quick brown fox jumps over the lazy dog.",
                                              "A lazy dog sleeps; the quick fox runs on."};
  const dew::Tokenizer tokenizer = dew::Tokenizer::from_json(
      dew::train_byte_level_bpe(text, {.vocab_size = 300, .min_frequency = 1}), "", "example tokenizer");
  const dew::ModelConfig config = dew::parse_model_config(
      fmt::format(R"({{"model_type":"llama","vocab_size":{},"hidden_size":64,"intermediate_size":128,
        "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"max_position_embeddings":128}})",
                  tokenizer.vocab_size()),
      "example config");
  const dew::CausalLM model = dew::CausalLM::init(config, dew::DType::f32, 0);
  dew::save_gguf(model, tokenizer, path, dew::DType::bf16);
  fmt::print("{}: {} bytes, {} parameters in bf16 (norms in f32), a vocabulary of {} tokens\n", path,
             std::filesystem::file_size(path), model.parameter_count(), tokenizer.vocab_size());
  return std::filesystem::file_size(path) > 2 * size_t(model.parameter_count()) ? 0 : 1;
}
