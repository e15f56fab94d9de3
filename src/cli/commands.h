// The subcommands of `dew`, each a function over the library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dew::cli {

struct CheckOptions {
  std::string op, implementation, dtype, tag = "ci";
  std::optional<uint64_t> seed;
  bool forward_only = false;  // only the implementations' output rows, no rule or derivative rows
};
int run_check(const CheckOptions& options);
int run_ops(bool markdown);
int run_inspect(const std::string& path, bool jsonl);

struct ScoreOptions {
  std::string model, dtype;
  bool ids = false;
};
int run_score(const ScoreOptions& options);

struct TokenizeOptions {
  std::string tokenizer;
  bool special = false, decode = false, skip_special = false;
};
int run_tokenize(const TokenizeOptions& options);

}  // namespace dew::cli
