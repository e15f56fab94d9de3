// Loading TOML configs with overrides, and reading their members by type.
#include "io/toml.h"

#include <filesystem>

#include "core/nearest_name.h"
#include "io/files.h"

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

// " (given by --set)" for a value an override put in place: it has no source file.
std::string origin(const toml::node& node) {
  return node.source().path ? "" : " (given by --set)";
}

// The entry of an array of tables that `part` names: its index, or the one table whose kind is `part`
// (a data stage by its kind: data.stage.tokenize.workers=2).
size_t array_entry(const toml::array& array, const std::string& part, const std::string& assignment) {
  const bool digits = part.size() < 10 && part.find_first_not_of("0123456789") == std::string::npos;
  DEW_REQUIRE(part.empty() || part[0] != '-',
              "--set {}: {} is not an entry of an array of {}; expected an index below {} or a kind",
              assignment, part, array.size(), array.size());
  if (digits) {
    DEW_REQUIRE(std::stoul(part) < array.size(),
                "--set {}: {} is an array of {} entries; expected an index below {}", assignment, part,
                array.size(), array.size());
    return std::stoul(part);
  }
  std::vector<size_t> matches;
  std::vector<std::string> kinds;
  for (size_t i = 0; i < array.size(); ++i) {
    const toml::table* entry = array.get(i)->as_table();
    const std::optional<std::string_view> kind =
        entry ? (*entry)["kind"].value<std::string_view>() : std::nullopt;
    if (!kind) continue;
    kinds.emplace_back(*kind);
    if (*kind == part) matches.push_back(i);
  }
  DEW_REQUIRE(matches.size() == 1, "--set {}: {} entries of kind {}; expected an index below {}{}",
              assignment, matches.size(), part, array.size(),
              kinds.empty() ? std::string() : fmt::format(" or one of the kinds {}", fmt::join(kinds, ", ")));
  return matches[0];
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
      const size_t entry = array_entry(*array, part, assignment);
      if (last)
        array->replace(array->begin() + long(entry), *parsed["v"].node());
      else
        at = array->get(entry);
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
  DEW_REQUIRE(!std::filesystem::is_directory(path), "{} is a directory; expected a TOML config file", path);
  return parse_toml(read_text_file(path), path, overrides);
}

toml::table parse_toml(std::string_view text, const std::string& source,
                       const std::vector<std::string>& overrides) {
  toml::table root;
  try {
    root = toml::parse(text, source);  // each node records `source` (origin() reads it)
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column, e.description());
  }
  for (const std::string& o : overrides) apply_override(root, source, o);
  return root;
}

void TomlFields::only(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : table_) {
    bool found = false;
    for (const char* k : known) found |= key.str() == k;
    if (found) continue;
    const std::vector<std::string> names(known.begin(), known.end());
    const std::string list = fmt::format("{}", fmt::join(names, ", "));
    if (const std::string nearest = nearest_name(key.str(), names); !nearest.empty())
      fail("{}: unknown key {}{}; did you mean {}? (expected one of {})", where_, key.str(), origin(value),
           nearest, list);
    fail("{}: unknown key {}{}; expected one of {}", where_, key.str(), origin(value), list);
  }
}

std::string TomlFields::text(const char* key) const {
  DEW_REQUIRE(has(key), "{}: {} is missing; expected a string", where_, key);
  return text_or(key, "");
}

std::string TomlFields::text_or(const char* key, const std::string& fallback) const {
  const toml::node* node = table_.get(key);
  if (!node) return fallback;
  DEW_REQUIRE(node->is_string(), "{}: {} is {}{}; expected a string", where_, key, kind_of(*node),
              origin(*node));
  return node->as_string()->get();
}

std::optional<int64_t> TomlFields::integer(const char* key) const {
  const toml::node* node = table_.get(key);
  if (!node) return std::nullopt;
  DEW_REQUIRE(node->is_integer(), "{}: {} is {}{}; expected an integer", where_, key, kind_of(*node),
              origin(*node));
  return node->as_integer()->get();
}

int64_t TomlFields::integer_or(const char* key, int64_t fallback) const {
  return integer(key).value_or(fallback);
}

double TomlFields::number_or(const char* key, double fallback) const {
  const toml::node* node = table_.get(key);
  if (!node) return fallback;
  DEW_REQUIRE(node->is_number(), "{}: {} is {}{}; expected a number", where_, key, kind_of(*node),
              origin(*node));
  // An integer where a number is expected reads as the nearest double (as Python's float(int) does);
  // toml++'s value<double>() gives none for one a double cannot hold exactly.
  if (const toml::value<int64_t>* integer = node->as_integer()) return double(integer->get());
  return node->as_floating_point()->get();
}

bool TomlFields::flag_or(const char* key, bool fallback) const {
  const toml::node* node = table_.get(key);
  if (!node) return fallback;
  DEW_REQUIRE(node->is_boolean(), "{}: {} is {}{}; expected true or false", where_, key, kind_of(*node),
              origin(*node));
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
