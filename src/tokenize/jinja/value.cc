// Python's str(), repr(), ==, < and json.dumps over template values.
#include "tokenize/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "dew/error.h"
#include "tokenize/utf8.h"

namespace dew::jinja {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [name, value] : entries)
    if (name == key) return &value;
  return nullptr;
}

void ValueDict::set(const std::string& key, Value value) {
  for (auto& [name, held] : entries)
    if (name == key) {
      held = std::move(value);
      return;
    }
  entries.emplace_back(key, std::move(value));
}

int64_t Value::as_int() const {
  return is_bool() ? int64_t(as_bool()) : std::get<int64_t>(data_);
}

double Value::as_number() const {
  return is_float() ? std::get<double>(data_) : double(as_int());
}

std::string Value::type_name() const {
  static constexpr const char* names[] = {"undefined", "none", "boolean", "integer",   "float",
                                          "string",    "list", "dict",    "namespace", "function"};
  return names[data_.index()];
}

bool truthy(const Value& value) {
  return std::visit(
      [&](const auto& held) -> bool {
        using T = std::decay_t<decltype(held)>;
        if constexpr (std::is_same_v<T, Undefined> || std::is_same_v<T, None>)
          return false;
        else if constexpr (std::is_same_v<T, bool>)
          return held;
        else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          return held != 0;
        else if constexpr (std::is_same_v<T, std::string>)
          return !held.empty();
        else if constexpr (std::is_same_v<T, Value::List> || std::is_same_v<T, Value::Dict>)
          return length(value) != 0;
        else
          return true;
      },
      value.data());
}

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest round-trip digits in scientific form ("1.2345e+02"), then Python's layout: positional
  // when the decimal exponent is in [-4, 16), else scientific with at least two exponent digits.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string scientific(buffer, result.ptr);
  const size_t e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  const int exponent = std::stoi(scientific.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    const int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(size_t(-point), '0') + digits;
    } else if (size_t(point) >= digits.size()) {
      out += digits + std::string(size_t(point) - digits.size(), '0') + ".0";
    } else {
      out.append(digits, 0, size_t(point)).append(".").append(digits, size_t(point));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out.append(".").append(digits, 1);
  out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

namespace {

// Python's repr of a str: single quotes unless the text holds ' and no ", escapes for \\, the quote
// and control characters; other characters as they are (Python 3 keeps printable non-ASCII).
std::string string_repr(const std::string& text) {
  const bool double_quoted = text.find('\'') != std::string::npos && text.find('"') == std::string::npos;
  const char quote = double_quoted ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == quote)
      out += std::string("\\") + char(c);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7F)
      out += fmt::format("\\x{:02x}", c);
    else
      out += char(c);
  }
  return out + quote;
}

template <class Item>
std::string join_items(const std::vector<Item>& items, const char* open, const char* close,
                       std::string (*show)(const Item&)) {
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + show(items[i]);
  return out + close;
}

std::string show_entry(const std::pair<std::string, Value>& entry) {
  return string_repr(entry.first) + ": " + repr(entry.second);
}

std::string show_value(const Value& value) {
  return repr(value);
}

}  // namespace

std::string to_text(const Value& value) {
  if (value.is_undefined()) return "";
  if (value.is_string()) return value.as_string();
  return repr(value);
}

std::string repr(const Value& value) {
  return std::visit(
      [&](const auto& held) -> std::string {
        using T = std::decay_t<decltype(held)>;
        if constexpr (std::is_same_v<T, Undefined>)
          return "";
        else if constexpr (std::is_same_v<T, None>)
          return "None";
        else if constexpr (std::is_same_v<T, bool>)
          return held ? "True" : "False";
        else if constexpr (std::is_same_v<T, int64_t>)
          return std::to_string(held);
        else if constexpr (std::is_same_v<T, double>)
          return float_repr(held);
        else if constexpr (std::is_same_v<T, std::string>)
          return string_repr(held);
        else if constexpr (std::is_same_v<T, Value::List>) {
          if (!value.is_tuple()) return join_items(*held, "[", "]", show_value);
          if (held->size() != 1) return join_items(*held, "(", ")", show_value);
          std::string single = "(";
          return single.append(repr(held->front())).append(",)");
        } else if constexpr (std::is_same_v<T, Value::Dict>)
          return join_items(held->entries, "{", "}", show_entry);
        else if constexpr (std::is_same_v<T, std::shared_ptr<Namespace>>)
          return "<Namespace " + join_items(held->attributes.entries, "{", "}", show_entry) + ">";
        else
          return "<function " + held->name + ">";
      },
      value.data());
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    return a.as_int() == b.as_int();
  }
  if (a.data().index() != b.data().index() || a.is_tuple() != b.is_tuple()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_list())
    return std::equal(a.as_list().begin(), a.as_list().end(), b.as_list().begin(), b.as_list().end(), equal);
  if (a.is_dict()) {
    const auto& x = a.as_dict().entries;
    const auto& y = b.as_dict();
    if (x.size() != y.entries.size()) return false;
    for (const auto& [key, item] : x)
      if (const Value* other = y.find(key); !other || !equal(item, *other)) return false;
    return true;
  }
  if (a.is_namespace()) return &a.as_namespace() == &b.as_namespace();
  return &a.as_callable() == &b.as_callable();
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_number() < b.as_number();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string())
    return a.as_string() < b.as_string();  // UTF-8 bytes order as code points
  if (a.is_list() && b.is_list())
    return std::lexicographical_compare(a.as_list().begin(), a.as_list().end(), b.as_list().begin(),
                                        b.as_list().end(), less);
  fail("'<' is not supported between a {} and a {}", a.type_name(), b.type_name());
}

namespace {

void append_json_string(std::string& out, const std::string& text, bool ensure_ascii) {
  out += '"';
  for (size_t pos = 0; pos < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c == '"')
      out += "\\\"", ++pos;
    else if (c == '\\')
      out += "\\\\", ++pos;
    else if (c == '\n')
      out += "\\n", ++pos;
    else if (c == '\r')
      out += "\\r", ++pos;
    else if (c == '\t')
      out += "\\t", ++pos;
    else if (c == '\b')
      out += "\\b", ++pos;
    else if (c == '\f')
      out += "\\f", ++pos;
    else if (c < 0x20)
      out += fmt::format("\\u{:04x}", c), ++pos;
    else if (c < 0x80 || !ensure_ascii)
      out += char(c), ++pos;
    else {
      const char32_t code_point = tokenize::next_code_point(text, pos);
      if (code_point < 0x10000) {
        out += fmt::format("\\u{:04x}", uint32_t(code_point));
      } else {
        const uint32_t v = uint32_t(code_point) - 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      }
    }
  }
  out += '"';
}

void append_json(std::string& out, const Value& value, const JsonFormat& format, int64_t depth) {
  const auto newline = [&](int64_t level) {
    if (format.indent) out += '\n' + std::string(size_t(*format.indent * level), ' ');
  };
  if (value.is_none())
    out += "null";
  else if (value.is_bool())
    out += value.as_bool() ? "true" : "false";
  else if (value.is_int())
    out += std::to_string(value.as_int());
  else if (value.is_float()) {
    const double x = value.as_number();
    out += std::isnan(x) ? "NaN" : std::isinf(x) ? (x > 0 ? "Infinity" : "-Infinity") : float_repr(x);
  } else if (value.is_string())
    append_json_string(out, value.as_string(), format.ensure_ascii);
  else if (value.is_list()) {
    const auto& list = value.as_list();
    if (list.empty()) return void(out += "[]");
    out += '[';
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out += format.item_separator;
      newline(depth + 1);
      append_json(out, list[i], format, depth + 1);
    }
    newline(depth);
    out += ']';
  } else if (value.is_dict()) {
    auto entries = value.as_dict().entries;
    if (entries.empty()) return void(out += "{}");
    if (format.sort_keys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += format.item_separator;
      newline(depth + 1);
      append_json_string(out, entries[i].first, format.ensure_ascii);
      out += format.key_separator;
      append_json(out, entries[i].second, format, depth + 1);
    }
    newline(depth);
    out += '}';
  } else {
    fail("tojson: a {} is not JSON serializable ({})", value.type_name(),
         value.is_undefined() ? value.as_undefined().description + " is undefined"
                              : "only none, booleans, "
                                "numbers, strings, lists "
                                "and dicts are");
  }
}

}  // namespace

std::string to_json(const Value& value, const JsonFormat& format) {
  std::string out;
  append_json(out, value, format, 0);
  return out;
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) fail("'in <string>' needs a string on the left, not a {}", item.type_name());
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict()) return item.is_string() && container.as_dict().find(item.as_string());
  for (const Value& element : iterate(container))
    if (equal(element, item)) return true;
  return false;
}

std::vector<std::string> characters(std::string_view text) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t size =
        std::min(tokenize::utf8_length(static_cast<unsigned char>(text[pos])), text.size() - pos);
    out.emplace_back(text.substr(pos, size));
    pos += size;
  }
  return out;
}

ValueList iterate(const Value& value) {
  if (value.is_undefined()) return {};
  if (value.is_list()) return value.as_list();
  if (value.is_dict()) {
    ValueList keys;
    for (const auto& entry : value.as_dict().entries) keys.emplace_back(entry.first);
    return keys;
  }
  if (value.is_string()) {
    ValueList out;
    for (auto& c : characters(value.as_string())) out.emplace_back(std::move(c));
    return out;
  }
  fail("a {} cannot be iterated over (a list, dict or string can)", value.type_name());
}

int64_t length(const Value& value) {
  if (value.is_undefined()) return 0;
  if (value.is_list()) return int64_t(value.as_list().size());
  if (value.is_dict()) return int64_t(value.as_dict().entries.size());
  if (value.is_namespace()) return int64_t(value.as_namespace().attributes.entries.size());
  if (value.is_string()) return int64_t(characters(value.as_string()).size());
  fail("a {} has no length (a list, dict or string has)", value.type_name());
}

}  // namespace dew::jinja
