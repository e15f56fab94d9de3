// Strict JSON parsing: duplicate keys and excessive depth refused during the parse (a parser
// callback), every nlohmann exception turned into a dew::Error that names the source.
#include "io/json.h"

#include <algorithm>

#include "core/nearest_name.h"

#include <dew/error.h>

#include <unordered_set>
#include <vector>

namespace dew {

std::string json_type_name(nlohmann::json::value_t kind) {
  using V = nlohmann::json::value_t;
  switch (kind) {
    case V::null:
      return "null";
    case V::object:
      return "object";
    case V::array:
      return "array";
    case V::string:
      return "string";
    case V::boolean:
      return "boolean";
    case V::number_integer:
      return "integer";
    case V::number_unsigned:
      return "unsigned integer";
    case V::number_float:
      return "number";
    default:
      return "binary";
  }
}

size_t invalid_utf8_at(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The lead byte fixes the length and the range of the first continuation byte (RFC 3629,
    // table 3-7 of Unicode): this excludes overlong forms, surrogates and values past U+10FFFF.
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c == 0xE0)
      len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC)
      len = 3;
    else if (c == 0xED)
      len = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF)
      len = 3;
    else if (c == 0xF0)
      len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
      len = 4;
    else if (c == 0xF4)
      len = 4, hi = 0x8F;
    else
      return i;
    if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

namespace {

// NOTE [strict JSON in two passes]: duplicate keys and depth are checked by a SAX pass that builds
// nothing, then the document is parsed without a callback. nlohmann's callback parser scans the parent
// object at every object's end (to drop discarded values), which made a safetensors header of 20,000
// tensors take seconds and 200,000 minutes; both passes here are linear.
class StrictChecks : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit StrictChecks(const std::string& source) : source_(source) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open();
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!keys_.back().insert(key).second)
      fail("{}: the key \"{}\" appears twice in one object; expected each key once", source_, key);
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    open();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    fail("{}: not valid JSON ({})", source_, e.what());
  }

 private:
  void open() {
    if (++depth_ > kMaxJsonDepth)
      fail("{}: JSON nested deeper than {} levels; expected a flatter document", source_, kMaxJsonDepth);
  }
  const std::string& source_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;  // one set per open object
};

template <class Json>
Json parse_strict(std::string_view text, const std::string& source) {
  if (size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    fail("{}: byte {} is not valid UTF-8 (0x{:02X}); expected UTF-8 text", source, bad,
         static_cast<unsigned char>(text[bad]));
  StrictChecks checks(source);
  nlohmann::json::sax_parse(text.begin(), text.end(), &checks);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", source, e.what());
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  return parse_strict<nlohmann::json>(text, source);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& source) {
  return parse_strict<nlohmann::ordered_json>(text, source);
}

const nlohmann::json& json_member(const nlohmann::json& object, const std::string& key,
                                  nlohmann::json::value_t kind, const std::string& source) {
  auto it = object.find(key);
  DEW_REQUIRE(it != object.end(), "{}: \"{}\" is missing; expected a value of type {}", source, key,
              json_type_name(kind));
  // A non-negative integer parses as unsigned, and is an integer too.
  const bool same = it->type() == kind || (kind == nlohmann::json::value_t::number_integer &&
                                           it->type() == nlohmann::json::value_t::number_unsigned);
  DEW_REQUIRE(same, "{}: \"{}\" is of type {}; expected {}", source, key, json_type_name(it->type()),
              json_type_name(kind));
  return *it;
}

bool JsonFields::has(const std::string& key) const {
  return json.contains(key) && !json[key].is_null();
}

int64_t JsonFields::size(const std::string& key) const {
  DEW_REQUIRE(has(key), "{}: \"{}\" is missing; expected a positive integer", source, key);
  const auto& v = json[key];
  DEW_REQUIRE(v.is_number_integer() && v.get<int64_t>() > 0, "{}: \"{}\" is {}; expected a positive integer",
              source, key, v.dump());
  return v.get<int64_t>();
}

int64_t JsonFields::size_or(const std::string& key, int64_t fallback) const {
  return has(key) ? size(key) : fallback;
}

double JsonFields::number_or(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  DEW_REQUIRE(json[key].is_number(), "{}: \"{}\" is {}; expected a number", source, key, json[key].dump());
  return json[key].get<double>();
}

bool JsonFields::flag_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  DEW_REQUIRE(json[key].is_boolean(), "{}: \"{}\" is {}; expected true or false", source, key,
              json[key].dump());
  return json[key].get<bool>();
}

int64_t JsonFields::count_or(const std::string& key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const auto& v = json[key];
  DEW_REQUIRE(v.is_number_integer() && v.get<int64_t>() >= 0,
              "{}: \"{}\" is {}; expected a count (an integer >= 0)", source, key, v.dump());
  return v.get<int64_t>();
}

std::string JsonFields::text_or(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  DEW_REQUIRE(json[key].is_string(), "{}: \"{}\" is {}; expected a string", source, key, json[key].dump());
  return json[key].get<std::string>();
}

void JsonFields::only(std::initializer_list<const char*> known) const {
  if (!json.is_object()) return;
  const std::vector<std::string> names(known.begin(), known.end());
  for (const auto& [key, value] : json.items()) {
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    const std::string list = fmt::format("{}", fmt::join(names, ", "));
    if (const std::string nearest = nearest_name(key, names); !nearest.empty())
      fail("{}: unknown key \"{}\"; did you mean {}? (expected one of {})", source, key, nearest, list);
    fail("{}: unknown key \"{}\"; expected one of {}", source, key, list);
  }
}

void JsonFields::refuse_unless(const std::string& key, const std::string& fallback,
                               std::initializer_list<const char*> accepted, const std::string& why) const {
  const std::string value =
      has(key) ? (json[key].is_string() ? json[key].get<std::string>() : json[key].dump()) : fallback;
  for (const char* a : accepted)
    if (value == a) return;
  fail("{}: \"{}\" is {}, which Dew does not implement ({}); expected {}", source, key, value, why,
       fmt::join(accepted, " or "));
}

}  // namespace dew
