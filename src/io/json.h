// Strict JSON parsing for every file Dew reads (safetensors headers, config.json, tokenizer.json):
// nlohmann::json underneath, refusing what it would silently accept — duplicate keys (the last would
// win) and nesting deeper than any format of ours needs. Errors are dew::Error naming the source.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace dew {

// Nesting deeper than this is refused: no file Dew reads comes near it, and a hostile file could
// otherwise make every later walk over the value deep.
inline constexpr int kMaxJsonDepth = 128;

// The byte offset of the first byte of `text` that is not well-formed UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF included), or npos when all of it is.
size_t invalid_utf8_at(std::string_view text);

// Parses `text` (UTF-8, checked first) as one JSON value; `source` names it in errors ("model.safetensors
// header", "config.json").
nlohmann::json parse_json(std::string_view text, const std::string& source);

// The same, keeping each object's keys in the order the text gives them (nlohmann::json sorts them):
// for values that are written out again, as a chat template's tool schemas are.
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& source);

// The member `key` of object `object` with the JSON type `kind` expects; throws naming source, key,
// what was found and what would be right.
const nlohmann::json& json_member(const nlohmann::json& object, const std::string& key,
                                  nlohmann::json::value_t kind, const std::string& source);

// "object", "array", "string", "unsigned integer", ...: for messages.
std::string json_type_name(nlohmann::json::value_t kind);

// Typed reads of an object's optional members, each with the value an absent (or null) member means;
// a member of the wrong type is an error naming `source`, the key, what it holds and what would do.
struct JsonFields {
  const nlohmann::json& json;
  const std::string& source;
  bool has(const std::string& key) const;
  int64_t size(const std::string& key) const;  // a positive integer, required
  int64_t size_or(const std::string& key, int64_t fallback) const;
  double number_or(const std::string& key, double fallback) const;
  bool flag_or(const std::string& key, bool fallback) const;
  int64_t count_or(const std::string& key, int64_t fallback) const;  // an integer >= 0
  std::string text_or(const std::string& key, const std::string& fallback) const;
  // Refuses a member not in `known`, naming it, the nearest known one and the list.
  void only(std::initializer_list<const char*> known) const;
  // A member that must hold one of `accepted` (or be absent, meaning `fallback`); `why` says what the
  // member does, for the error.
  void refuse_unless(const std::string& key, const std::string& fallback,
                     std::initializer_list<const char*> accepted, const std::string& why) const;
};

}  // namespace dew
