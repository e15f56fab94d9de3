// Strict JSON parsing for every file Dew reads (safetensors headers, config.json, tokenizer.json):
// nlohmann::json underneath, refusing what it would silently accept — duplicate keys (the last would
// win) and nesting deeper than any format of ours needs. Errors are dew::Error naming the source.
#pragma once

#include <nlohmann/json.hpp>

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

// The member `key` of object `object` with the JSON type `kind` expects; throws naming source, key,
// what was found and what would be right.
const nlohmann::json& json_member(const nlohmann::json& object, const std::string& key,
                                  nlohmann::json::value_t kind, const std::string& source);

// "object", "array", "string", "unsigned integer", ...: for messages.
std::string json_type_name(nlohmann::json::value_t kind);

}  // namespace dew
