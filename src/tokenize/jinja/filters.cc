// Jinja2's filters and tests, with transformers' tojson (ensure_ascii off, keys in their order).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "dew/error.h"
#include "tokenize/jinja/builtins.h"
#include "tokenize/jinja/limits.h"
#include "tokenize/jinja/text.h"

namespace dew::jinja {

std::vector<Value> bind(Arguments& arguments, const std::string& function,
                        std::initializer_list<Parameter> parameters) {
  if (arguments.positional.size() > parameters.size())
    fail("{} takes at most {} arguments, got {}", function, parameters.size(), arguments.positional.size());
  std::vector<Value> bound;
  size_t i = 0;
  for (const Parameter& parameter : parameters) {
    std::optional<Value> value;
    if (i < arguments.positional.size()) value = arguments.positional[i];
    for (const auto& [name, given] : arguments.named)
      if (name == parameter.name) {
        if (value) fail("{} got the argument '{}' twice", function, parameter.name);
        value = given;
      }
    if (!value) value = parameter.fallback;
    if (!value) fail("{} needs the argument '{}'", function, parameter.name);
    bound.push_back(std::move(*value));
    ++i;
  }
  for (const auto& named : arguments.named)
    if (std::none_of(parameters.begin(), parameters.end(),
                     [&](const Parameter& p) { return named.first == p.name; }))
      fail("{} has no argument named '{}'", function, named.first);
  return bound;
}

namespace {

const std::string& text_of(const Value& value, const std::string& function) {
  if (!value.is_string()) fail("{} needs a string, got a {}", function, value.type_name());
  return value.as_string();
}

int64_t integer_of(const Value& value, const std::string& function) {
  if (!value.is_number() || value.is_float())
    fail("{} needs an integer, got a {}", function, value.type_name());
  return value.as_int();
}

// An attribute path "a.b" or an index, as map/sort/join/selectattr take it.
Value attribute_path(const Value& item, const Value& path) {
  if (path.is_number()) return item_of(item, path);
  Value current = item;
  for (const std::string& part : split_text(to_text(path), std::string_view("."), -1))
    current = item_of(current, Value(part));
  return current;
}

// The key sort, unique, min and max compare: strings lowered unless case_sensitive.
Value sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
  Value key = attribute.is_none() ? item : attribute_path(item, attribute);
  if (!case_sensitive && key.is_string()) key = lower_text(key.as_string());
  return key;
}

Value indent(const std::string& text, const Value& width, bool first, bool blank) {
  const int64_t spaces = width.is_string() ? 0 : integer_of(width, "indent");
  DEW_REQUIRE(spaces <= kMaxIndent, "indent's width {} is past the sandbox's {}", spaces, kMaxIndent);
  const std::string indention =
      width.is_string() ? width.as_string() : std::string(size_t(std::max<int64_t>(spaces, 0)), ' ');
  check_text_size(text.size() + size_t(std::count(text.begin(), text.end(), '\n') + 1) * indention.size(),
                  "an indented text");
  std::vector<std::string> lines = split_text(text + "\n", std::string_view("\n"), -1);
  lines.pop_back();  // Jinja appends a newline so that splitlines() keeps a trailing empty line
  std::string out = lines.empty() ? "" : lines[0];
  for (size_t i = 1; i < lines.size(); ++i)
    out += "\n" + (blank || !lines[i].empty() ? indention : "") + lines[i];
  return first ? indention + out : out;
}

Value tojson(const Value& value, Arguments& arguments) {
  auto a = bind(arguments, "the filter tojson",
                {{"ensure_ascii", false}, {"indent", None{}}, {"separators", None{}}, {"sort_keys", false}});
  JsonFormat format;
  format.ensure_ascii = truthy(a[0]);
  if (!a[1].is_none()) {
    format.indent = integer_of(a[1], "tojson's indent");
    DEW_REQUIRE(*format.indent >= 0 && *format.indent <= kMaxIndent,
                "tojson's indent {} is outside the sandbox's 0 to {}", *format.indent, kMaxIndent);
  }
  format.item_separator = format.indent ? "," : ", ";
  format.key_separator = ": ";
  if (!a[2].is_none()) {
    const ValueList separators = iterate(a[2]);
    if (separators.size() != 2 || !separators[0].is_string() || !separators[1].is_string())
      fail("tojson's separators must be two strings (item, key), got {}", repr(a[2]));
    format.item_separator = separators[0].as_string();
    format.key_separator = separators[1].as_string();
  }
  format.sort_keys = truthy(a[3]);
  return to_json(value, format);
}

// select / reject / selectattr / rejectattr: keep the items whose test (default: truthiness) is `keep`.
Value select(const Value& sequence, Arguments& arguments, bool by_attribute, bool keep,
             const std::string& function) {
  std::vector<Value> rest = arguments.positional;
  if (by_attribute && rest.empty()) fail("{} needs an attribute name", function);
  const Value attribute = by_attribute ? rest.front() : Value(None{});
  if (by_attribute) rest.erase(rest.begin());
  std::optional<std::string> test;
  if (!rest.empty()) {
    test = text_of(rest.front(), function + "'s test name");
    rest.erase(rest.begin());
  }
  ValueList out;
  for (const Value& item : iterate(sequence)) {
    const Value subject = by_attribute ? attribute_path(item, attribute) : item;
    Arguments test_arguments{rest, {}};
    const bool passed = test ? apply_test(*test, subject, test_arguments) : truthy(subject);
    if (passed == keep) out.push_back(item);
  }
  return out;
}

Value map_items(const Value& sequence, Arguments& arguments) {
  ValueList out;
  for (const auto& [name, attribute] : arguments.named)
    if (name == "attribute") {
      Value fallback = Undefined{"the mapped attribute"};
      for (const auto& [other, value] : arguments.named)
        if (other == "default") fallback = value;
      for (const Value& item : iterate(sequence)) {
        Value mapped = attribute_path(item, attribute);
        out.push_back(mapped.is_undefined() ? fallback : mapped);
      }
      return out;
    }
  if (arguments.positional.empty()) fail("map needs a filter name or attribute=");
  const std::string filter = text_of(arguments.positional.front(), "map's filter name");
  Arguments rest{std::vector<Value>(arguments.positional.begin() + 1, arguments.positional.end()),
                 arguments.named};
  for (const Value& item : iterate(sequence)) {
    Arguments each = rest;
    out.push_back(apply_filter(filter, item, each));
  }
  return out;
}

Value sorted(const Value& sequence, Arguments& arguments) {
  auto a = bind(arguments, "the filter sort",
                {{"reverse", false}, {"case_sensitive", false}, {"attribute", None{}}});
  ValueList items = iterate(sequence);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x, a[2], truthy(a[1])), ky = sort_key(y, a[2], truthy(a[1]));
    return truthy(a[0]) ? less(ky, kx) : less(kx, ky);
  });
  return items;
}

Value extreme(const Value& sequence, Arguments& arguments, bool largest, const std::string& function) {
  auto a = bind(arguments, function, {{"case_sensitive", false}, {"attribute", None{}}});
  const ValueList items = iterate(sequence);
  if (items.empty()) return Undefined{"the " + function + " of an empty sequence"};
  const Value* best = &items[0];
  for (const Value& item : items) {
    const Value key = sort_key(item, a[1], truthy(a[0])), best_key = sort_key(*best, a[1], truthy(a[0]));
    if (largest ? less(best_key, key) : less(key, best_key)) best = &item;
  }
  return *best;
}

Value round_number(const Value& value, Arguments& arguments) {
  auto a = bind(arguments, "the filter round", {{"precision", int64_t(0)}, {"method", "common"}});
  if (!value.is_number()) fail("the filter round needs a number, got a {}", value.type_name());
  const int64_t precision = integer_of(a[0], "round's precision");
  const std::string method = text_of(a[1], "round's method");
  if (method != "common" && method != "ceil" && method != "floor")
    fail("round's method must be 'common', 'ceil' or 'floor', not '{}'", method);
  const double value_x = value.as_number();
  // Python's round: a precision past the exponent's range leaves the value (as it is exact there) or
  // gives a zero of its sign.
  if (!std::isfinite(value_x) || precision > 330) return value_x;
  if (precision < -330) return std::copysign(0.0, value_x);
  const double scale = std::pow(10.0, double(precision));
  const double x = value_x * scale;
  if (!std::isfinite(x)) return value_x;
  double rounded;
  if (method == "common")
    rounded = std::nearbyint(x);  // Python's round(): half to even
  else if (method == "ceil")
    rounded = std::ceil(x);
  else
    rounded = std::floor(x);
  return rounded / scale;
}

using Filter = std::function<Value(const Value&, Arguments&)>;

const std::map<std::string, Filter>& filters() {
  static const std::map<std::string, Filter> table = [] {
    std::map<std::string, Filter> f;
    const auto no_arguments = [](const char* name, std::function<Value(const Value&)> body) {
      return [name, body](const Value& v, Arguments& arguments) {
        bind(arguments, std::string("the filter ") + name, {});
        return body(v);
      };
    };
    const auto text_filter = [&](const char* name, std::string (*body)(std::string_view)) {
      return no_arguments(name, [body](const Value& v) -> Value { return body(to_text(v)); });
    };
    f["abs"] = no_arguments("abs", [](const Value& v) -> Value {
      if (v.is_float()) return std::fabs(v.as_number());
      return std::abs(integer_of(v, "the filter abs"));
    });
    f["attr"] = [](const Value& v, Arguments& arguments) -> Value {  // Python's getattr: no dict entries
      auto a = bind(arguments, "the filter attr", {{"name", std::nullopt}});
      const std::string& name = text_of(a[0], "attr's name");
      if (v.is_dict())
        return method_of(v, name).value_or(Undefined{"the attribute '" + name + "' of a dict"});
      return attribute_of(v, name);
    };
    f["capitalize"] = text_filter("capitalize", capitalize_text);
    f["lower"] = text_filter("lower", lower_text);
    f["upper"] = text_filter("upper", upper_text);
    f["title"] = text_filter("title", title_words);
    f["length"] = f["count"] = no_arguments("length", [](const Value& v) -> Value { return length(v); });
    f["default"] = f["d"] = [](const Value& v, Arguments& arguments) {
      auto a = bind(arguments, "the filter default", {{"default_value", ""}, {"boolean", false}});
      return (v.is_undefined() || (truthy(a[1]) && !truthy(v))) ? a[0] : v;
    };
    f["dictsort"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter dictsort",
                    {{"case_sensitive", false}, {"by", "key"}, {"reverse", false}});
      if (!v.is_dict()) fail("the filter dictsort needs a dict, got a {}", v.type_name());
      auto entries = v.as_dict().entries;
      const bool by_value = text_of(a[1], "dictsort's by") == "value";
      std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
        const Value kx = sort_key(by_value ? x.second : Value(x.first), Value(None{}), truthy(a[0]));
        const Value ky = sort_key(by_value ? y.second : Value(y.first), Value(None{}), truthy(a[0]));
        return truthy(a[2]) ? less(ky, kx) : less(kx, ky);
      });
      ValueList pairs;
      for (auto& [key, value] : entries) pairs.push_back(Value::tuple({key, value}));
      return pairs;
    };
    f["escape"] = f["e"] = no_arguments("escape", [](const Value& v) -> Value {
      std::string out;
      for (char c : to_text(v)) {
        switch (c) {
          case '&':
            out += "&amp;";
            break;
          case '<':
            out += "&lt;";
            break;
          case '>':
            out += "&gt;";
            break;
          case '"':
            out += "&#34;";
            break;
          case '\'':
            out += "&#39;";
            break;
          default:
            out += c;
        }
      }
      return out;
    });
    f["first"] = no_arguments("first", [](const Value& v) -> Value {
      const ValueList items = iterate(v);
      return items.empty() ? Value(Undefined{"the first item of an empty sequence"}) : items.front();
    });
    f["last"] = no_arguments("last", [](const Value& v) -> Value {
      const ValueList items = iterate(v);
      return items.empty() ? Value(Undefined{"the last item of an empty sequence"}) : items.back();
    });
    f["float"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter float", {{"default", 0.0}});
      if (v.is_number()) return v.as_number();
      if (v.is_string()) {
        try {
          size_t used = 0;
          const std::string text = strip_text(v.as_string(), std::nullopt, true, true);
          const double x = std::stod(text, &used);
          if (used == text.size()) return x;
        } catch (const std::exception&) {
        }
      }
      return a[0];
    };
    f["int"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter int", {{"default", int64_t(0)}, {"base", int64_t(10)}});
      if (v.is_float()) {
        const double x = std::trunc(v.as_number());
        if (std::isnan(x)) fail("cannot convert float NaN to integer");
        if (std::isinf(x)) fail("cannot convert float infinity to integer");
        if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
          fail("int of {} is past 64 bits", v.as_number());
        return int64_t(x);
      }
      if (v.is_number()) return v.as_int();
      if (v.is_string()) {
        try {
          size_t used = 0;
          const std::string text = strip_text(v.as_string(), std::nullopt, true, true);
          const int64_t x = std::stoll(text, &used, int(integer_of(a[1], "int's base")));
          if (used == text.size()) return x;
        } catch (const std::exception&) {
        }
      }
      return a[0];
    };
    f["indent"] = [](const Value& v, Arguments& arguments) {
      auto a =
          bind(arguments, "the filter indent", {{"width", int64_t(4)}, {"first", false}, {"blank", false}});
      return indent(to_text(v), a[0], truthy(a[1]), truthy(a[2]));
    };
    f["items"] = no_arguments("items", [](const Value& v) -> Value {
      if (v.is_undefined()) return ValueList{};
      if (!v.is_dict()) fail("the filter items needs a dict, got a {}", v.type_name());
      ValueList pairs;
      for (const auto& [key, value] : v.as_dict().entries) pairs.push_back(Value::tuple({key, value}));
      return pairs;
    });
    f["join"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter join", {{"d", ""}, {"attribute", None{}}});
      std::string out;
      bool first = true;
      for (const Value& item : iterate(v)) {
        if (!std::exchange(first, false)) out += to_text(a[0]);
        out += to_text(a[1].is_none() ? item : attribute_path(item, a[1]));
      }
      return out;
    };
    f["list"] = no_arguments("list", [](const Value& v) -> Value { return iterate(v); });
    f["map"] = map_items;
    f["max"] = [](const Value& v, Arguments& arguments) {
      return extreme(v, arguments, true, "the filter max");
    };
    f["min"] = [](const Value& v, Arguments& arguments) {
      return extreme(v, arguments, false, "the filter min");
    };
    f["select"] = [](const Value& v, Arguments& arguments) {
      return select(v, arguments, false, true, "select");
    };
    f["reject"] = [](const Value& v, Arguments& arguments) {
      return select(v, arguments, false, false, "reject");
    };
    f["selectattr"] = [](const Value& v, Arguments& arguments) {
      return select(v, arguments, true, true, "selectattr");
    };
    f["rejectattr"] = [](const Value& v, Arguments& arguments) {
      return select(v, arguments, true, false, "rejectattr");
    };
    f["replace"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter replace",
                    {{"old", std::nullopt}, {"new", std::nullopt}, {"count", None{}}});
      return replace_text(to_text(v), to_text(a[0]), to_text(a[1]),
                          a[2].is_none() ? -1 : integer_of(a[2], "replace's count"));
    };
    f["reverse"] = no_arguments("reverse", [](const Value& v) -> Value {
      ValueList items = iterate(v);
      std::reverse(items.begin(), items.end());
      if (!v.is_string()) return items;
      std::string text;
      for (const Value& c : items) text += c.as_string();
      return text;
    });
    f["round"] = round_number;
    f["safe"] = no_arguments("safe", [](const Value& v) { return v; });
    f["sort"] = sorted;
    f["string"] = no_arguments("string", [](const Value& v) -> Value { return to_text(v); });
    f["sum"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter sum", {{"attribute", None{}}, {"start", int64_t(0)}});
      Value total = a[1];
      for (const Value& item : iterate(v)) {
        const Value term = a[0].is_none() ? item : attribute_path(item, a[0]);
        if (!term.is_number() || !total.is_number())
          fail("the filter sum adds numbers, got a {}", term.type_name());
        total = (total.is_float() || term.is_float()) ? Value(total.as_number() + term.as_number())
                                                      : Value(total.as_int() + term.as_int());
      }
      return total;
    };
    f["tojson"] = tojson;
    f["trim"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter trim", {{"chars", None{}}});
      std::optional<std::string_view> chars;
      if (!a[0].is_none()) chars = text_of(a[0], "trim's chars");
      return strip_text(to_text(v), chars, true, true);
    };
    f["unique"] = [](const Value& v, Arguments& arguments) -> Value {
      auto a = bind(arguments, "the filter unique", {{"case_sensitive", false}, {"attribute", None{}}});
      ValueList out, seen;
      for (const Value& item : iterate(v)) {
        const Value key = sort_key(item, a[1], truthy(a[0]));
        if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, key); })) {
          seen.push_back(key);
          out.push_back(item);
        }
      }
      return out;
    };
    f["wordcount"] = no_arguments("wordcount", [](const Value& v) -> Value {
      return int64_t(split_text(to_text(v), std::nullopt, -1).size());
    });
    return f;
  }();
  return table;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& operand, Arguments& arguments) {
  const auto& table = filters();
  const auto it = table.find(name);
  if (it == table.end()) fail("there is no filter named '{}'", name);
  return it->second(operand, arguments);
}

bool apply_test(const std::string& name, const Value& operand, Arguments& arguments) {
  const std::string function = "the test " + name;
  const auto one = [&]() -> Value { return bind(arguments, function, {{"other", std::nullopt}})[0]; };
  const auto none = [&] { bind(arguments, function, {}); };
  if (name == "defined") return none(), !operand.is_undefined();
  if (name == "undefined") return none(), operand.is_undefined();
  if (name == "none") return none(), operand.is_none();
  if (name == "boolean") return none(), operand.is_bool();
  if (name == "true") return none(), operand.is_bool() && operand.as_bool();
  if (name == "false") return none(), operand.is_bool() && !operand.as_bool();
  if (name == "string") return none(), operand.is_string();
  if (name == "number") return none(), operand.is_number();
  if (name == "integer") return none(), operand.is_int();
  if (name == "float") return none(), operand.is_float();
  if (name == "mapping") return none(), operand.is_dict();
  // Jinja's Undefined has a length, iterates and can be called (to raise): these tests say yes to it.
  if (name == "sequence" || name == "iterable")
    return none(), operand.is_string() || operand.is_list() || operand.is_dict() || operand.is_undefined();
  if (name == "callable") return none(), operand.is_callable() || operand.is_undefined();
  if (name == "escaped") return none(), false;
  if (name == "lower")
    return none(), operand.is_string() && lower_text(operand.as_string()) == operand.as_string();
  if (name == "upper")
    return none(), operand.is_string() && upper_text(operand.as_string()) == operand.as_string();
  if (name == "odd" || name == "even") {
    none();
    const int64_t x = integer_of(operand, function);
    return (x % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const int64_t by = integer_of(one(), function);
    if (by == 0) fail("the test divisibleby: division by zero");
    return integer_of(operand, function) % by == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equal(operand, one());
  if (name == "ne" || name == "!=") return !equal(operand, one());
  if (name == "lt" || name == "lessthan" || name == "<") return less(operand, one());
  if (name == "gt" || name == "greaterthan" || name == ">") return less(one(), operand);
  if (name == "le" || name == "<=") return !less(one(), operand);
  if (name == "ge" || name == ">=") return !less(operand, one());
  if (name == "in") return contains(one(), operand);
  if (name == "sameas") {
    const Value other = one();
    if (operand.is_list() || operand.is_dict() || operand.is_namespace() || operand.is_callable())
      return operand.data().index() == other.data().index() && equal(operand, other) &&
             (operand.is_list()   ? &operand.as_list() == &other.as_list()
              : operand.is_dict() ? &operand.as_dict() == &other.as_dict()
                                  : true);
    return operand.data().index() == other.data().index() && equal(operand, other);
  }
  fail("there is no test named '{}'", name);
}

}  // namespace dew::jinja
