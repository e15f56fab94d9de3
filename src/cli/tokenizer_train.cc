// `dew tokenizer train FILE... --vocab-size N [--special TOKEN ...] --output DIR [--force]`: learns a
// byte-level BPE from text files (each file one document) and writes DIR/tokenizer.json and a
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

void write_trained_tokenizer(const std::vector<std::string_view>& documents, const TokenizerTrainOptions& o,
                             const std::string& trained_on) {
  const std::filesystem::path tokenizer_path = std::filesystem::path(o.output) / "tokenizer.json";
  DEW_REQUIRE(o.force || !std::filesystem::exists(tokenizer_path),
              "{} exists already; give --force to overwrite it, or another --output directory",
              tokenizer_path.string());
  // The output directory first, so that a path that cannot be one fails before the training.
  std::error_code error;
  std::filesystem::create_directories(o.output, error);
  DEW_REQUIRE(
      !error && std::filesystem::is_directory(o.output),
      "--output {} cannot be a directory to write tokenizer.json into ({}); expected a new or existing "
      "directory",
      o.output, error ? error.message() : "a file of that name exists");
  BpeTrainOptions options;
  options.vocab_size = o.vocab_size;
  options.min_frequency = o.min_frequency;
  options.special_tokens = o.special_tokens;
  const std::string tokenizer_json = train_byte_level_bpe(documents, options);
  const auto write = [&](const std::string& name, const std::string& text) {
    write_text_file((std::filesystem::path(o.output) / name).string(), text);
  };
  nlohmann::ordered_json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                                   {"clean_up_tokenization_spaces", false}};
  if (!o.special_tokens.empty()) config["eos_token"] = o.special_tokens.front();
  // tokenizer.json last: its presence says the directory is complete.
  write("tokenizer_config.json", config.dump(2) + "\n");
  write("tokenizer.json", tokenizer_json);
  const Tokenizer trained = Tokenizer::load(o.output);
  fmt::print(stderr, "trained a byte-level BPE of {} tokens on {}: {}\n", trained.vocab_size(), trained_on,
             tokenizer_path.string());
}

namespace {

int run_tokenizer_train(const TokenizerTrainOptions& o) {
  std::vector<std::unique_ptr<MappedFile>> files;
  std::vector<std::string_view> documents;
  uint64_t bytes = 0;
  for (const std::string& path : o.files) {
    files.push_back(std::make_unique<MappedFile>(path));
    documents.emplace_back(reinterpret_cast<const char*>(files.back()->data()), files.back()->size());
    bytes += files.back()->size();
  }
  write_trained_tokenizer(documents, o, fmt::format("{} file(s), {} bytes", o.files.size(), bytes));
  return 0;
}

}  // namespace

void add_tokenizer(CLI::App& app, int& status) {
  auto* tokenizer_cmd = app.add_subcommand("tokenizer", "tokenizer tools");
  tokenizer_cmd->require_subcommand(1);
  auto* tokenizer_train_cmd = tokenizer_cmd->add_subcommand(
      "train",
      "learn a byte-level BPE from text files; writes a tokenizer.json the Hugging Face tokenizers load");
  TokenizerTrainOptions& tokenizer_train = runs(tokenizer_train_cmd, status, run_tokenizer_train);
  tokenizer_train_cmd->add_option("files", tokenizer_train.files, "text files (UTF-8), each one document")
      ->required();
  tokenizer_train_cmd->add_option("--output", tokenizer_train.output, "the directory to write")->required();
  tokenizer_train_cmd->add_flag("--force", tokenizer_train.force, "overwrite a tokenizer.json in --output");
  tokenizer_train_cmd->add_option("--vocab-size", tokenizer_train.vocab_size, "tokens in all")
      ->default_val(8192);
  tokenizer_train_cmd
      ->add_option("--min-frequency", tokenizer_train.min_frequency, "fewest sightings of a merged pair")
      ->default_val(2);
  tokenizer_train_cmd
      ->add_option("--special", tokenizer_train.special_tokens,
                   "special tokens, after the merges (the first is also the EOS)")
      ->allow_extra_args(false);
}

}  // namespace dew::cli
