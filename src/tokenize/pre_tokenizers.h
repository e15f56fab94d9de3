// tokenizer.json's "pre_tokenizer": splits normalized text into the pieces the model encodes one by
// one. Supported: Split (regex or string, every split behavior, invert), ByteLevel, Metaspace, Digits,
// WhitespaceSplit, Sequence. Any other type is refused by name.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace dew::tokenize {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each of `pieces` by the pieces it splits into. `at_start`: the pieces come from the
  // text's first section (Metaspace's prepend_scheme "first").
  virtual void split(std::vector<std::string>& pieces, bool at_start) const = 0;
};

// nullptr for a null spec (the whole text is one piece).
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec, const std::string& source);

}  // namespace dew::tokenize
