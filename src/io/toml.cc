// Loading TOML configs with overrides, and reading their members by type.
#include "io/toml.h"

#include <dew/error.h>

#include <algorithm>
#include <sstream>
#include <string_view>
#include <vector>

namespace dew {
namespace {

std::string kind_of(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

void apply_override(toml::table& root, const std::string& path, const std::string& assignment) {
  const size_t equals = assignment.find('=');
  DEW_REQUIRE(equals != std::string::npos && equals > 0,
              "--set {}: expected key=value (data.stage.2.seed=5), relative to {}", assignment, path);
  const std::string key = assignment.substr(0, equals), text = assignment.substr(equals + 1);
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + text);
  } catch (const toml::parse_error&) {
    parsed.insert("v", text);  // a bare word: the string itself
  }
  std::vector<std::string> parts;
  std::stringstream in(key);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  toml::node* at = &root;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    DEW_REQUIRE(!part.empty(), "--set {}: an empty part in the key", assignment);
    const bool last = i + 1 == parts.size();
    if (toml::array* array = at->as_array()) {
      const bool digits = part.size() < 10 && part.find_first_not_of("0123456789") == std::string::npos;
      DEW_REQUIRE(digits && std::stoul(part) < array->size(),
                  "--set {}: {} is an array of {} entries; expected an index below {}", assignment, part,
                  array->size(), array->size());
      if (last)
        array->replace(array->begin() + long(std::stoul(part)), *parsed["v"].node());
      else
        at = array->get(std::stoul(part));
      continue;
    }
    toml::table* table = at->as_table();
    DEW_REQUIRE(table, "--set {}: {} is {}, not a table", assignment, part, kind_of(*at));
    if (last) {
      table->insert_or_assign(part, *parsed["v"].node());
    } else {
      if (!table->contains(part)) table->insert(part, toml::table{});
      at = table->get(part);
    }
  }
}

}  // namespace

toml::table load_toml(const std::string& path, const std::vector<std::string>& overrides) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, e.description());
  }
  for (const std::string& o : overrides) apply_override(root, path, o);
  return root;
}

namespace {

// The number of single-character edits between two keys (Levenshtein), for "did you mean".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

void TomlFields::only(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : table_) {
    bool found = false;
    for (const char* k : known) found |= key.str() == k;
    if (found) continue;
    std::string list;
    const char* nearest = nullptr;
    size_t best = SIZE_MAX;
    for (const char* k : known) {
      list += (list.empty() ? "" : ", ") + std::string(k);
      const size_t d = edit_distance(key.str(), k);
      if (d < best) best = d, nearest = k;
    }
    if (nearest && best <= std::max<size_t>(2, key.str().size() / 3))
      fail("{}: unknown key {}; did you mean {}? (expected one of {})", where_, key.str(), nearest, list);
    fail("{}: unknown key {}; expected one of {}", where_, key.str(), list);
  }
}

std::string TomlFields::text(const char* key) const {
  DEW_REQUIRE(has(key), "{}: {} is missing; expected a string", where_, key);
  return text_or(key, "");
}

std::string TomlFields::text_or(const char* key, const std::string& fallback) const {
  const toml::node* node = table_.get(key);
  if (!node) return fallback;
  DEW_REQUIRE(node->is_string(), "{}: {} is {}; expected a string", where_, key, kind_of(*node));
  return node->as_string()->get();
}

std::optional<int64_t> TomlFields::integer(const char* key) const {
  const toml::node* node = table_.get(key);
  if (!node) return std::nullopt;
  DEW_REQUIRE(node->is_integer(), "{}: {} is {}; expected an integer", where_, key, kind_of(*node));
  return node->as_integer()->get();
}

int64_t TomlFields::integer_or(const char* key, int64_t fallback) const {
  return integer(key).value_or(fallback);
}

double TomlFields::number_or(const char* key, double fallback) const {
  const toml::node* node = table_.get(key);
  if (!node) return fallback;
  DEW_REQUIRE(node->is_number(), "{}: {} is {}; expected a number", where_, key, kind_of(*node));
  return node->value<double>().value();
}

bool TomlFields::flag_or(const char* key, bool fallback) const {
  const toml::node* node = table_.get(key);
  if (!node) return fallback;
  DEW_REQUIRE(node->is_boolean(), "{}: {} is {}; expected true or false", where_, key, kind_of(*node));
  return node->as_boolean()->get();
}

std::vector<std::string> TomlFields::texts(const char* key) const {
  const toml::node* node = table_.get(key);
  DEW_REQUIRE(node, "{}: {} is missing; expected an array of strings", where_, key);
  if (node->is_string()) return {node->as_string()->get()};
  const toml::array* array = node->as_array();
  DEW_REQUIRE(array, "{}: {} is {}; expected an array of strings", where_, key, kind_of(*node));
  std::vector<std::string> out;
  for (const toml::node& item : *array) {
    DEW_REQUIRE(item.is_string(), "{}: {} holds {}; expected only strings", where_, key, kind_of(item));
    out.push_back(item.as_string()->get());
  }
  return out;
}

}  // namespace dew
