// `dew tokenizer train FILE... --vocab-size N [--special TOKEN ...] --output DIR`: learns a byte-level
// BPE from text files (each file one document) and writes DIR/tokenizer.json and a
// tokenizer_config.json, which Dew and the Hugging Face tokenizers (and transformers) load.
#include <dew/error.h>
#include <dew/tokenizer.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "io/files.h"

namespace dew::cli {

int run_tokenizer_train(const TokenizerTrainOptions& o) {
  std::vector<std::unique_ptr<MappedFile>> files;
  std::vector<std::string_view> documents;
  uint64_t bytes = 0;
  for (const std::string& path : o.files) {
    files.push_back(std::make_unique<MappedFile>(path));
    documents.emplace_back(reinterpret_cast<const char*>(files.back()->data()), files.back()->size());
    bytes += files.back()->size();
  }
  BpeTrainOptions options;
  options.vocab_size = o.vocab_size;
  options.min_frequency = o.min_frequency;
  options.special_tokens = o.special_tokens;
  const std::string tokenizer_json = train_byte_level_bpe(documents, options);

  std::filesystem::create_directories(o.output);
  const auto write = [&](const std::string& name, const std::string& text) {
    write_text_file((std::filesystem::path(o.output) / name).string(), text);
  };
  nlohmann::ordered_json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                                   {"clean_up_tokenization_spaces", false}};
  if (!o.special_tokens.empty()) config["eos_token"] = o.special_tokens.front();
  write("tokenizer.json", tokenizer_json);
  write("tokenizer_config.json", config.dump(2) + "\n");
  const Tokenizer trained = Tokenizer::load(o.output);
  fmt::print("trained a byte-level BPE of {} tokens on {} file(s), {} bytes: {}/tokenizer.json\n",
             trained.vocab_size(), o.files.size(), bytes, o.output);
  return 0;
}

}  // namespace dew::cli
