// Tokenizer::gguf_vocabulary: a tokenizer.json's byte-level BPE as llama.cpp's "gpt2" vocabulary. llama.cpp
// does not run the file's pre-tokenizer pattern; it runs its own, chosen by name (tokenizer.ggml.pre), so
// only patterns it has under a name are accepted, matched character for character.
#include <dew/error.h>

#include <array>
#include <utility>

#include "tokenize/tokenizer_state.h"

namespace dew {
namespace {

// llama.cpp's pre-tokenizer names and the tokenizer.json Split patterns they implement.
constexpr std::array<std::pair<const char*, const char*>, 2> kSplitPatterns = {{
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
}};

bool is_byte_level(const nlohmann::json& spec, bool with_regex) {
  return spec.is_object() && spec.value("type", "") == "ByteLevel" &&
         spec.value("use_regex", true) == with_regex;
}

// The name of the pre-tokenizer `spec` is, or an error naming what it is.
std::string pre_tokenizer_name(const nlohmann::json& spec) {
  if (is_byte_level(spec, true)) return "gpt-2";  // ByteLevel's own split is GPT-2's pattern
  if (spec.is_object() && spec.value("type", "") == "Sequence") {
    const nlohmann::json& parts = spec.value("pretokenizers", nlohmann::json::array());
    if (parts.is_array() && parts.size() == 2 && is_byte_level(parts[1], false) && parts[0].is_object() &&
        parts[0].value("type", "") == "Split" && parts[0].value("behavior", "") == "Isolated" &&
        !parts[0].value("invert", false) && parts[0].contains("pattern") && parts[0]["pattern"].is_object()) {
      const std::string pattern = parts[0]["pattern"].value("Regex", "");
      for (const auto& [name, known] : kSplitPatterns)
        if (pattern == known) return name;
    }
  }
  fail(
      "[gguf] the tokenizer's pre_tokenizer is {}; llama.cpp runs its own, so a GGUF file can carry only "
      "the byte-level ones it has: GPT-2's, or a Split by Llama 3's or Qwen 2's pattern then ByteLevel",
      spec.dump().substr(0, 300));
}

}  // namespace

GgufVocabulary Tokenizer::gguf_vocabulary(int64_t vocab_size) const {
  const State& s = *state_;
  DEW_REQUIRE(!s.model->byte_fallback(),
              "[gguf] the tokenizer's BPE falls back to byte tokens (a SentencePiece-style vocabulary); Dew "
              "writes byte-level BPE vocabularies to GGUF");
  const nlohmann::json& normalizer = s.normalizer_spec;
  DEW_REQUIRE(
      normalizer.is_null() || (normalizer.is_object() && normalizer.value("type", "") == "NFC"),
      "[gguf] the tokenizer's normalizer is {}; llama.cpp's byte-level BPE normalizes nothing (expected "
      "none, or NFC)",
      normalizer.dump().substr(0, 200));
  DEW_REQUIRE(int64_t(s.tokens.size()) <= vocab_size,
              "[gguf] the tokenizer has {} ids but the model only {} rows; expected a model with a row for "
              "every token",
              s.tokens.size(), vocab_size);
  GgufVocabulary v;
  v.pre = pre_tokenizer_name(s.pre_tokenizer_spec);
  v.tokens.resize(size_t(vocab_size));
  v.token_types.assign(size_t(vocab_size), 5);
  for (size_t id = 0; id < s.tokens.size(); ++id)
    if (!s.tokens[id].empty()) v.tokens[id] = s.tokens[id], v.token_types[id] = 1;
  for (const tokenize::AddedToken& t : s.added) v.token_types[size_t(t.id)] = t.special ? 3 : 4;
  for (size_t id = 0; id < v.tokens.size(); ++id)  // llama.cpp wants every id named, and uniquely
    if (v.token_types[id] == 5) v.tokens[id] = "[PAD" + std::to_string(id) + "]";
  v.merges = s.model->merges();
  v.bos = s.bos;
  v.eos = s.eos;
  const std::vector<int64_t>& prefix = s.special_template.prefix;
  v.add_bos = s.bos && prefix.size() == 1 && prefix[0] == *s.bos;
  return v;
}

}  // namespace dew
