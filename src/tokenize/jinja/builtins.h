// What a chat template can call: Jinja2's filters and tests, the methods of Python's str and dict
// that the sandbox allows, and the globals transformers provides (raise_exception, strftime_now)
// beside Jinja's own (range, namespace, dict). Errors are dew::Error without a location; the
// renderer adds the template's name and line.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tokenize/jinja/value.h"

namespace dew::jinja {

// A parameter of a builtin: its name and the value it takes when the call does not pass it (none
// when the parameter is required).
struct Parameter {
  const char* name;
  std::optional<Value> fallback;
};

// The call's arguments matched to `parameters` (positional first, then by name); a missing
// required one, an unknown name or too many positional arguments is an error naming `function`.
std::vector<Value> bind(Arguments& arguments, const std::string& function,
                        std::initializer_list<Parameter> parameters);

Value apply_filter(const std::string& name, const Value& operand, Arguments& arguments);
bool apply_test(const std::string& name, const Value& operand, Arguments& arguments);

// `object.name` as a bound method (str.startswith, dict.items, ...), or nothing.
std::optional<Value> method_of(const Value& object, const std::string& name);

// Jinja's getattr: `object.name` is a method, else a dict's entry or a namespace's attribute, else
// Undefined. An Undefined object is an error naming what was undefined.
Value attribute_of(const Value& object, const std::string& name);
// Jinja's getitem: `object[key]` is a dict's entry or a list's or string's element (negative indices
// count from the end), else the attribute of that name, else Undefined.
Value item_of(const Value& object, const Value& key);

// The raise_exception global throws this: the template refused its input on purpose.
struct TemplateRaised {
  std::string message;
};

ValueDict builtin_globals();

}  // namespace dew::jinja
