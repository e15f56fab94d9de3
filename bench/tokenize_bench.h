// `dew bench tokenize`: encode throughput (MB/s on one core) of Dew's tokenizers against the Hugging
// Face tokenizers.js on the same text in the same run, by the same protocol: load, warm on the first
// 200 lines, then encode every line once. A table, then one JSON line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dew::bench {

struct TokenizeBenchOptions {
  std::vector<std::string> tokenizers;  // directories; default: the four of tools/tokenizer-oracle
  std::string text;                     // a UTF-8 file; default: the Brown corpus, tags removed
};
int run_tokenize_bench(const TokenizeBenchOptions& options);

// The Brown corpus (tools/tokenizer-oracle) as plain English, a sentence per line: each tagged line
// "The/at jury/nn" becomes "The jury".
std::string brown_text();
// The lines of `text`, without their "\n" (views into it).
std::vector<std::string_view> lines_of(const std::string& text);
// The directory of a tokenizer of tools/tokenizer-oracle ("llama3", "qwen3", "deepseek_v3", "llama2").
std::string oracle_tokenizer(const std::string& name);

}  // namespace dew::bench
