// tokenizer.json's "normalizer": text → text before pre-tokenization. Supported: NFC, NFD, NFKC, NFKD
// (utf8proc), Prepend, Replace (string or regex), Strip, Sequence. Any other type is refused by name.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace dew::tokenize {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view text) const = 0;
};

// nullptr for a null spec (no normalizer). `source` names the file in errors.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec, const std::string& source);

// Rust's str::replace: every non-overlapping occurrence of `from`, left to right.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

}  // namespace dew::tokenize
