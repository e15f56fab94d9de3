// TOML configs (toml++ underneath): a file loaded with command-line overrides applied, and typed
// reads of a table's members whose errors name the file, the key, what was found and what would do.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace dew {

// Parses `path` (errors name path:line:column), then applies each override "a.b.2.c=value": the
// value is read as TOML ("5", "true", "[1, 2]", "\"x\"") or, failing that, as a bare string; tables
// on the way are created, an array index must exist.
toml::table load_toml(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from a config's text; `source` names it in errors.
toml::table parse_toml(std::string_view text, const std::string& source,
                       const std::vector<std::string>& overrides = {});

// The members of one table, read by type; `where` names the table in errors ("config.toml: data.source").
class TomlFields {
 public:
  TomlFields(const toml::table& table, std::string where) : table_(table), where_(std::move(where)) {}
  // Refuses members not in `known` (a misspelt key would otherwise be ignored), suggesting the nearest.
  void only(std::initializer_list<const char*> known) const;
  bool has(const char* key) const { return table_.contains(key); }
  std::string text(const char* key) const;  // required
  std::string text_or(const char* key, const std::string& fallback) const;
  int64_t integer_or(const char* key, int64_t fallback) const;
  std::optional<int64_t> integer(const char* key) const;  // absent: nullopt
  double number_or(const char* key, double fallback) const;
  bool flag_or(const char* key, bool fallback) const;
  std::vector<std::string> texts(const char* key) const;  // an array of strings (or one string), required
  const std::string& where() const { return where_; }

 private:
  const toml::table& table_;
  std::string where_;
};

}  // namespace dew
