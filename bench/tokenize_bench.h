// `dew bench tokenize`: encode throughput (MB/s on one core) of Dew's tokenizers against the Hugging
// Face tokenizers.js on the same text in the same run, by the same protocol: load, warm on the first
// 200 lines, then encode every line once. A table, then one JSON line.
#pragma once

#include <string>
#include <vector>

namespace dew::bench {

struct TokenizeBenchOptions {
  std::vector<std::string> tokenizers;  // directories; default: the four of tools/tokenizer-oracle
  std::string text;                     // a UTF-8 file; default: the Brown corpus, tags removed
};
int run_tokenize_bench(const TokenizeBenchOptions& options);

}  // namespace dew::bench
