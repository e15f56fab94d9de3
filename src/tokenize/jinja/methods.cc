// Attribute and item access, the str and dict methods the immutable sandbox allows, and the globals.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "dew/error.h"
#include "tokenize/jinja/builtins.h"
#include "tokenize/jinja/limits.h"
#include "tokenize/jinja/text.h"

namespace dew::jinja {

namespace {

std::optional<std::string_view> optional_text(const Value& value, const std::string& function) {
  if (value.is_none()) return std::nullopt;
  if (!value.is_string()) fail("{} needs a string or none, got a {}", function, value.type_name());
  return std::string_view(value.as_string());
}

int64_t integer_or(const Value& value, int64_t fallback, const std::string& function) {
  if (value.is_none()) return fallback;
  if (!value.is_number() || value.is_float())
    fail("{} needs an integer, got a {}", function, value.type_name());
  return value.as_int();
}

// str.startswith / endswith: a prefix or a list of them.
bool affix_matches(const std::string& text, const Value& affixes, bool at_start,
                   const std::string& function) {
  const auto matches = [&](const Value& affix) {
    if (!affix.is_string())
      fail("{} needs a string or a tuple of strings, got a {}", function, affix.type_name());
    const std::string& a = affix.as_string();
    if (a.size() > text.size()) return false;
    return at_start ? text.compare(0, a.size(), a) == 0
                    : text.compare(text.size() - a.size(), a.size(), a) == 0;
  };
  if (affixes.is_tuple()) {
    for (const Value& affix : affixes.as_list())
      if (matches(affix)) return true;
    return false;
  }
  return matches(affixes);
}

Value split_method(const std::string& text, Arguments& arguments, bool from_right) {
  const std::string function = from_right ? "str.rsplit" : "str.split";
  auto a = bind(arguments, function, {{"sep", None{}}, {"maxsplit", int64_t(-1)}});
  const auto sep = optional_text(a[0], function);
  if (sep && sep->empty()) fail("{}: the separator is empty", function);
  ValueList parts;
  for (auto& part : split_text(text, sep, integer_or(a[1], -1, function), from_right))
    parts.emplace_back(std::move(part));
  return parts;
}

Value bound(const std::string& name, std::function<Value(Arguments&)> call) {
  return Callable{name, std::move(call)};
}

std::optional<Value> string_method(const std::string& text, const std::string& name) {
  const std::string function = "str." + name;
  const auto no_arguments = [&](std::function<Value()> body) {
    return bound(function, [function, body](Arguments& arguments) {
      bind(arguments, function, {});
      return body();
    });
  };
  if (name == "startswith" || name == "endswith")
    return bound(function, [text, function, start = name == "startswith"](Arguments& arguments) -> Value {
      auto a = bind(arguments, function, {{"prefix", std::nullopt}});
      return affix_matches(text, a[0], start, function);
    });
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return bound(function, [text, function, name](Arguments& arguments) -> Value {
      auto a = bind(arguments, function, {{"chars", None{}}});
      return strip_text(text, optional_text(a[0], function), name != "rstrip", name != "lstrip");
    });
  if (name == "split" || name == "rsplit")
    return bound(function, [text, from_right = name == "rsplit"](Arguments& arguments) {
      return split_method(text, arguments, from_right);
    });
  if (name == "splitlines")
    return no_arguments([text] {
      ValueList lines;
      std::string rest = replace_text(replace_text(text, "\r\n", "\n", -1), "\r", "\n", -1);
      if (!rest.empty() && rest.back() == '\n') rest.pop_back();
      if (!text.empty())
        for (auto& line : split_text(rest, std::string_view("\n"), -1)) lines.emplace_back(std::move(line));
      return lines;
    });
  if (name == "upper") return no_arguments([text] { return Value(upper_text(text)); });
  if (name == "lower") return no_arguments([text] { return Value(lower_text(text)); });
  if (name == "title") return no_arguments([text] { return Value(title_text(text)); });
  if (name == "capitalize") return no_arguments([text] { return Value(capitalize_text(text)); });
  if (name == "replace")
    return bound(function, [text, function](Arguments& arguments) -> Value {
      auto a =
          bind(arguments, function, {{"old", std::nullopt}, {"new", std::nullopt}, {"count", int64_t(-1)}});
      if (!a[0].is_string() || !a[1].is_string()) fail("{} needs two strings", function);
      return replace_text(text, a[0].as_string(), a[1].as_string(), integer_or(a[2], -1, function));
    });
  if (name == "find" || name == "rfind" || name == "count")
    return bound(function, [text, function, name](Arguments& arguments) -> Value {
      auto a = bind(arguments, function, {{"sub", std::nullopt}});
      if (!a[0].is_string()) fail("{} needs a string, got a {}", function, a[0].type_name());
      const std::string& sub = a[0].as_string();
      if (name == "count") {
        if (sub.empty()) return int64_t(characters(text).size() + 1);
        int64_t n = 0;
        for (size_t at = text.find(sub); at != std::string::npos; at = text.find(sub, at + sub.size())) ++n;
        return n;
      }
      const size_t at = name == "find" ? text.find(sub) : text.rfind(sub);
      return at == std::string::npos ? int64_t(-1) : int64_t(characters(text.substr(0, at)).size());
    });
  if (name == "join")
    return bound(function, [text, function](Arguments& arguments) -> Value {
      auto a = bind(arguments, function, {{"iterable", std::nullopt}});
      std::string out;
      bool first = true;
      for (const Value& item : iterate(a[0])) {
        if (!item.is_string()) fail("{}: every item must be a string, got a {}", function, item.type_name());
        if (!std::exchange(first, false)) out += text;
        out += item.as_string();
      }
      return out;
    });
  for (const auto& [method, kind] :
       {std::pair{"isspace", CharClass::space}, std::pair{"isdigit", CharClass::digit},
        std::pair{"isalpha", CharClass::alpha}, std::pair{"isalnum", CharClass::alnum}})
    if (name == method) return no_arguments([text, kind = kind] { return Value(all_in_class(text, kind)); });
  return std::nullopt;
}

std::optional<Value> dict_method(const Value::Dict& dict, const std::string& name) {
  const std::string function = "dict." + name;
  if (name == "items" || name == "keys" || name == "values")
    return bound(function, [dict, function, name](Arguments& arguments) -> Value {
      bind(arguments, function, {});
      ValueList out;
      for (const auto& [key, value] : dict->entries)
        out.push_back(name == "items" ? Value::tuple({key, value}) : name == "keys" ? Value(key) : value);
      return out;
    });
  if (name == "get")
    return bound(function, [dict, function](Arguments& arguments) -> Value {
      auto a = bind(arguments, function, {{"key", std::nullopt}, {"default", None{}}});
      const Value* found = a[0].is_string() ? dict->find(a[0].as_string()) : nullptr;
      return found ? *found : a[1];
    });
  return std::nullopt;
}

}  // namespace

std::optional<Value> method_of(const Value& object, const std::string& name) {
  if (object.is_string()) return string_method(object.as_string(), name);
  if (object.is_dict()) return dict_method(std::get<Value::Dict>(object.data()), name);
  return std::nullopt;
}

Value attribute_of(const Value& object, const std::string& name) {
  if (object.is_undefined())
    fail("{} is undefined, so it has no attribute '{}'", object.as_undefined().description, name);
  if (auto method = method_of(object, name)) return *method;
  const ValueDict* entries = object.is_dict()        ? &object.as_dict()
                             : object.is_namespace() ? &object.as_namespace().attributes
                                                     : nullptr;
  if (entries)
    if (const Value* found = entries->find(name)) return *found;
  return Undefined{"the attribute '" + name + "' of a " + object.type_name()};
}

Value item_of(const Value& object, const Value& key) {
  if (object.is_undefined())
    fail("{} is undefined, so it has no item {}", object.as_undefined().description, repr(key));
  if (object.is_dict() && key.is_string()) {
    if (const Value* found = object.as_dict().find(key.as_string())) return *found;
  } else if ((object.is_list() || object.is_string()) && key.is_number() && !key.is_float()) {
    const ValueList items = object.is_list() ? object.as_list() : iterate(object);
    const int64_t n = int64_t(items.size());
    const int64_t i = key.as_int() < 0 ? key.as_int() + n : key.as_int();
    if (i >= 0 && i < n) return items[size_t(i)];
  }
  if (key.is_string()) return attribute_of(object, key.as_string());
  return Undefined{"the item " + repr(key) + " of a " + object.type_name()};
}

ValueDict builtin_globals() {
  ValueDict globals;
  globals.set("range", Callable{"range", [](Arguments& arguments) -> Value {
                                  auto& p = arguments.positional;
                                  if (p.empty() || p.size() > 3 || !arguments.named.empty())
                                    fail("range takes 1 to 3 integers (stop, or start, stop[, step])");
                                  int64_t v[3] = {0, 0, 1};
                                  for (size_t i = 0; i < p.size(); ++i)
                                    v[p.size() == 1 ? 1 : i] = integer_or(p[i], 0, "range");
                                  if (v[2] == 0) fail("range's step cannot be zero");
                                  // Items counted in double: no bound of int64 overflows the count,
                                  // and counts near the limit are exact.
                                  const double span = double(v[1]) - double(v[0]), step = double(v[2]);
                                  const double items = std::max(0.0, std::ceil(span / step));
                                  if (items > double(kMaxRange))
                                    fail("range({}, {}, {}) has {:.0f} items; the sandbox allows at most {}",
                                         v[0], v[1], v[2], items, kMaxRange);
                                  ValueList out;
                                  for (int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2])
                                    out.emplace_back(i);
                                  return out;
                                }});
  globals.set("namespace", Callable{"namespace", [](Arguments& arguments) -> Value {
                                      auto ns = std::make_shared<Namespace>();
                                      for (const Value& initial : arguments.positional) {
                                        if (!initial.is_dict())
                                          fail("namespace() takes a dict and name=value pairs");
                                        for (const auto& [key, value] : initial.as_dict().entries)
                                          ns->attributes.set(key, value);
                                      }
                                      for (const auto& [key, value] : arguments.named)
                                        ns->attributes.set(key, value);
                                      return ns;
                                    }});
  globals.set("dict", Callable{"dict", [](Arguments& arguments) -> Value {
                                 if (!arguments.positional.empty())
                                   fail("dict() here takes name=value pairs only");
                                 ValueDict out;
                                 for (const auto& [key, value] : arguments.named) out.set(key, value);
                                 return out;
                               }});
  globals.set("raise_exception",
              Callable{"raise_exception", [](Arguments& arguments) -> Value {
                         auto a = bind(arguments, "raise_exception", {{"message", std::nullopt}});
                         throw TemplateRaised{to_text(a[0])};
                       }});
  globals.set("strftime_now", Callable{"strftime_now", [](Arguments& arguments) -> Value {
                                         auto a = bind(arguments, "strftime_now", {{"format", std::nullopt}});
                                         const std::time_t now = std::time(nullptr);
                                         std::tm local{};
                                         localtime_r(&now, &local);
                                         char buffer[512];
                                         const size_t n = std::strftime(buffer, sizeof buffer,
                                                                        to_text(a[0]).c_str(), &local);
                                         return std::string(buffer, n);
                                       }});
  return globals;
}

}  // namespace dew::jinja
