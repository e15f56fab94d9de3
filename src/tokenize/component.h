// What every tokenizer.json component reader shares: reading a spec's "type" (with the name errors
// use for it) and the steps of a "Sequence"; and how tokenizer_config.json names a token.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dew/error.h"
#include "io/json.h"

namespace dew::tokenize {

struct ComponentKind {
  std::string type;
  std::string where;  // "[tokenizer] FILE decoder Strip": the prefix of this component's errors
};

// tokenizer_config.json names a token as a string or as {"content": ...} (an AddedToken).
inline std::optional<std::string> config_token(const nlohmann::json& config, const std::string& key) {
  if (!config.contains(key)) return std::nullopt;
  const auto& value = config[key];
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  return std::nullopt;
}

// `kind` is "normalizer", "pre_tokenizer", "decoder", ...; the spec must be an object with a "type".
inline ComponentKind component_kind(const nlohmann::json& spec, const std::string& source, const char* kind) {
  const std::string where = source + " " + kind;
  DEW_REQUIRE(spec.is_object(), "{}: expected an object, got {}", where, spec.dump());
  std::string type = json_member(spec, "type", nlohmann::json::value_t::string, where).get<std::string>();
  return {type, where + " " + type};
}

// The steps listed under `key` of a Sequence spec, each made by `make(step)`; null steps are dropped.
template <class Component, class Make>
std::vector<std::unique_ptr<Component>> sequence_steps(const nlohmann::json& spec, const char* key,
                                                       const std::string& where, Make make) {
  std::vector<std::unique_ptr<Component>> steps;
  for (const auto& step : json_member(spec, key, nlohmann::json::value_t::array, where))
    if (auto made = make(step)) steps.push_back(std::move(made));
  return steps;
}

}  // namespace dew::tokenize
