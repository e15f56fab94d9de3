// tokenizer.json's "post_processor", for one sequence: the special tokens it puts before and after
// the encoded text. TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel (no ids of its
// own: it only moves offsets) and Sequence are read; other types are refused by name.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dew::tokenize {

struct SpecialTokenTemplate {
  std::vector<int64_t> prefix, suffix;
};

// `id_of` looks a token up in the vocabulary and the added tokens.
SpecialTokenTemplate make_special_token_template(
    const nlohmann::json& spec, const std::function<std::optional<int64_t>(const std::string&)>& id_of,
    const std::string& source);

}  // namespace dew::tokenize
