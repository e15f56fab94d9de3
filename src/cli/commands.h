// The subcommands of `dew`, each a function over the library. Each command's file adds it to the command
// line (`add_*`): its options, its help, and a callback that runs it once the line is parsed and leaves
// the exit status in `status`.
#pragma once

#include <CLI/CLI.hpp>

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
void add_export(CLI::App& app, int& status);
void add_check(CLI::App& app, int& status);
void add_ops(CLI::App& app, int& status);
void add_bench(CLI::App& app, int& status);
void add_serve(CLI::App& app, int& status);
void add_sample(CLI::App& app, int& status);
void add_launch(CLI::App& app, int& status);
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

// Plain text from the command line instead of JSONL on stdin: --text TEXT, or --file PATH's contents.
struct TextArgument {
  std::optional<std::string> text;
  std::string file;
  std::optional<std::string> get() const;  // nullopt when neither was given
  void add_to(CLI::App& command, const char* what);
};

struct TokenizerTrainOptions {
  std::vector<std::string> files, special_tokens;
  int64_t vocab_size = 8192, min_frequency = 2;
  std::string output;
  bool force = false;  // overwrite a tokenizer.json at `output`
};
// Trains on `documents` and writes the tokenizer directory; `trained_on` describes them for the message.
void write_trained_tokenizer(const std::vector<std::string_view>& documents,
                             const TokenizerTrainOptions& options, const std::string& trained_on);

}  // namespace dew::cli
