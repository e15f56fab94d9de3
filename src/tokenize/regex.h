// The regular expressions of tokenizer.json (Split pre-tokenizers, Replace normalizers): patterns
// written for Oniguruma, as the Hugging Face tokenizers compile them, run on PCRE2 with Unicode
// properties and a JIT. The few escapes whose meaning differs between the two engines are rewritten
// (NOTE [Oniguruma on PCRE2], regex.cc); a construct that cannot be is refused by name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dew::tokenize {

class Regex {
 public:
  // `source` names the pattern's place in errors ("tokenizer.json pre_tokenizer Split").
  Regex(const std::string& oniguruma_pattern, const std::string& source);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // The [start, end) byte spans of the non-overlapping, non-empty matches in `text` (well-formed
  // UTF-8), left to right.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

// `pattern` with a literal string's regex metacharacters escaped.
std::string escape_regex(std::string_view literal);

}  // namespace dew::tokenize
