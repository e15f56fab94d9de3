// The subcommands of `dew`, each a function over the library. Each command's file adds it to the command
// line (`add_*`): its options, its help, and a callback that runs it once the line is parsed and leaves
// the exit status in `status`.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dew::cli {

void add_train(CLI::App& app, int& status);
void add_report(CLI::App& app, int& status);
void add_generate(CLI::App& app, int& status);
void add_score(CLI::App& app, int& status);
void add_tokenize(CLI::App& app, int& status);
void add_tokenizer(CLI::App& app, int& status);
void add_data(CLI::App& app, int& status);
void add_inspect(CLI::App& app, int& status);
void add_check(CLI::App& app, int& status);
void add_ops(CLI::App& app, int& status);
void add_bench(CLI::App& app, int& status);
// The options a command's flags fill, and its callback, which runs `run` with them once the line is
// parsed and leaves the exit status in `status`.
template <class Options>
Options& runs(CLI::App* command, int& status, int (*run)(const Options&)) {
  auto options = std::make_shared<Options>();
  command->callback([options, &status, run] { status = run(*options); });
  return *options;
}
// `dew --version`: Dew's version and commit, the build, the compiler, this CPU's instruction sets and the
// libraries found.
std::string version_text();

struct CheckOptions {
  std::string op, implementation, dtype, tag = "ci";
  std::optional<uint64_t> seed;
  bool forward_only = false;  // only the implementations' output rows, no rule or derivative rows
};
int run_check(const CheckOptions& options);
int run_ops(bool markdown);
int run_inspect(const std::string& path, bool jsonl);

// Plain text from the command line instead of JSONL on stdin: --text TEXT, or --file PATH's contents.
struct TextArgument {
  std::optional<std::string> text;
  std::string file;
  std::optional<std::string> get() const;  // nullopt when neither was given
  void add_to(CLI::App& command, const char* what);
};

struct ScoreOptions {
  std::string model, dtype;
  bool ids = false;
  TextArgument text;  // one text's log-likelihood instead of JSONL records
};
int run_score(const ScoreOptions& options);

struct GenerateOptions {
  std::string model, prompt, dtype;
  int64_t max_new_tokens = 256;
  uint64_t seed = 0;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
  std::vector<std::string> stop;
  bool chat = false;            // the prompt is a user message, through the chat template
  std::string system;           // with --chat: a system message first
  std::string assistant_start;  // with --chat: the beginning of the reply, which the model continues
  std::vector<std::string>
      chat_vars;  // with --chat: KEY=VALUE template variables (VALUE as JSON if it parses)
};
int run_generate(const GenerateOptions& options);

struct TokenizeOptions {
  std::string tokenizer;
  bool special = false, decode = false, skip_special = false;
  bool chat = false;  // lines are conversations {"messages": [...], ...} rendered by the chat template
  TextArgument text;  // one text's ids instead of JSONL records
};
int run_tokenize(const TokenizeOptions& options);

struct TokenizerTrainOptions {
  std::vector<std::string> files, special_tokens;
  int64_t vocab_size = 8192, min_frequency = 2;
  std::string output;
  bool force = false;  // overwrite a tokenizer.json at `output`
};
int run_tokenizer_train(const TokenizerTrainOptions& options);
// Trains on `documents` and writes the tokenizer directory; `trained_on` describes them for the message.
void write_trained_tokenizer(const std::vector<std::string_view>& documents,
                             const TokenizerTrainOptions& options, const std::string& trained_on);

struct DataOptions {
  std::string what;  // show, stats or preview
  std::string config;
  std::vector<std::string> overrides;
  int64_t batches = 0;  // 0: until the chain ends
};
int run_data(const DataOptions& options);

struct TrainOptions {
  std::string config, run_dir;
  std::string restart;  // a checkpoint, run or model directory: a new run from its weights only
  std::vector<std::string> overrides;
};
int run_train(const TrainOptions& options);  // no config: examples/default.toml (the default job)
// Trains options.config until done or until `stop` is set (after a step, with a checkpoint).
int train_with(const TrainOptions& options, const std::atomic<bool>& stop);
int run_report(const std::string& run_dir);

}  // namespace dew::cli
