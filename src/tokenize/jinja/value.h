// The values a chat template computes with: Python's objects as Jinja2 sees them (None, bool, int,
// float, str, list, dict with insertion order, namespace, callables) plus Jinja's Undefined. Printing
// follows Python's str() and repr(); tojson follows json.dumps. Strings are UTF-8; lengths, indexing
// and slicing count code points, as Python does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dew::jinja {

class Value;
using ValueList = std::vector<Value>;

// A Python dict with string keys, in insertion order (what json.loads builds and tojson writes).
struct ValueDict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);
};

// `{% set ns = namespace(a=1) %}`: the one mutable object a template can build (`set ns.a = 2`).
struct Namespace {
  ValueDict attributes;
};

struct Arguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};

// A global (range, namespace), a bound method ('a'.upper) or a macro.
struct Callable {
  std::string name;
  std::function<Value(Arguments&)> call;
};

// A name or attribute that does not exist. It prints as nothing, is false, iterates as empty, and is
// an error anywhere else; `description` says what was missing, for that error.
struct Undefined {
  std::string description;
};

struct None {};

class Value {
 public:
  using List = std::shared_ptr<const ValueList>;
  using Dict = std::shared_ptr<const ValueDict>;
  using Data = std::variant<Undefined, None, bool, int64_t, double, std::string, List, Dict,
                            std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>;

  Value() : data_(Undefined{"a value"}) {}
  Value(Undefined undefined) : data_(std::move(undefined)) {}
  Value(None) : data_(None{}) {}
  Value(bool value) : data_(value) {}
  Value(int64_t value) : data_(value) {}
  Value(int value) : data_(int64_t(value)) {}
  Value(double value) : data_(value) {}
  Value(std::string value) : data_(std::move(value)) {}
  Value(const char* value) : data_(std::string(value)) {}
  Value(ValueList list) : data_(std::make_shared<const ValueList>(std::move(list))) {}
  Value(ValueDict dict) : data_(std::make_shared<const ValueDict>(std::move(dict))) {}
  Value(std::shared_ptr<Namespace> ns) : data_(std::move(ns)) {}
  Value(Callable callable) : data_(std::make_shared<const Callable>(std::move(callable))) {}
  // A Python tuple: a list that prints as (a, b) (tuple literals, dict.items(), varargs).
  static Value tuple(ValueList items) {
    Value value(std::move(items));
    value.tuple_ = true;
    return value;
  }

  bool is_undefined() const { return std::holds_alternative<Undefined>(data_); }
  bool is_none() const { return std::holds_alternative<None>(data_); }
  bool is_bool() const { return std::holds_alternative<bool>(data_); }
  bool is_int() const { return std::holds_alternative<int64_t>(data_); }
  bool is_float() const { return std::holds_alternative<double>(data_); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return std::holds_alternative<std::string>(data_); }
  bool is_list() const { return std::holds_alternative<List>(data_); }  // tuples too
  bool is_tuple() const { return tuple_; }
  bool is_dict() const { return std::holds_alternative<Dict>(data_); }
  bool is_namespace() const { return std::holds_alternative<std::shared_ptr<Namespace>>(data_); }
  bool is_callable() const { return std::holds_alternative<std::shared_ptr<const Callable>>(data_); }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;    // an int or a bool
  double as_number() const;  // an int, a float or a bool
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const ValueList& as_list() const { return *std::get<List>(data_); }
  const ValueDict& as_dict() const { return *std::get<Dict>(data_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  const Undefined& as_undefined() const { return std::get<Undefined>(data_); }
  const Data& data() const { return data_; }

  // "string", "list", "dict", ...: for messages.
  std::string type_name() const;

 private:
  Data data_;
  bool tuple_ = false;
};

// Python's truth value; Undefined is false.
bool truthy(const Value& value);
// Python's str(): what {{ value }} prints. Undefined prints as nothing.
std::string to_text(const Value& value);
// Python's repr(), used inside the str() of lists and dicts.
std::string repr(const Value& value);
// Python's repr of a float: the shortest digits that read back to it ("1.0", "1e-05", "inf").
std::string float_repr(double value);
// Python's ==, including 1 == 1.0 == True and element-wise lists and dicts.
bool equal(const Value& a, const Value& b);
// Python's <: numbers with numbers, strings with strings (by code point), lists element-wise;
// anything else is an error naming both types.
bool less(const Value& a, const Value& b);

struct JsonFormat {
  std::optional<int64_t> indent;              // a newline and this many spaces per level; none: one line
  std::string item_separator, key_separator;  // json.dumps' separators: (", ", ": ") or (",", ": ")
  bool ensure_ascii = false;  // escape every code point past U+007F as \uXXXX (pairs past U+FFFF)
  bool sort_keys = false;
};
// json.dumps(value, ...); Undefined, namespaces and callables are errors naming the type.
std::string to_json(const Value& value, const JsonFormat& format);

// Python's `item in container`: a substring of a string, a key of a dict, an element of a list.
bool contains(const Value& container, const Value& item);
// The elements a `for` walks: a list's items, a dict's keys, a string's characters; Undefined is empty.
ValueList iterate(const Value& value);
// Python's len(); Undefined has length 0.
int64_t length(const Value& value);

// Code points of UTF-8 text, each as its own string.
std::vector<std::string> characters(std::string_view text);

}  // namespace dew::jinja
