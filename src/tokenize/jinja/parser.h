// Tokens → syntax tree, with Jinja2's grammar and operator precedence. The statements are those chat
// templates use: if, for (with else, a filter condition, break and continue), set (also of a
// namespace's attribute, and as a block), macro, filter, and transformers' generation. Others
// (include, extends, import, call, ...) are refused by name: a chat template has no loader.
#pragma once

#include <string>
#include <string_view>

#include "tokenize/jinja/ast.h"

namespace dew::jinja {

// `source` names the template in errors, which also give the line.
Template parse_template(std::string_view template_source, const std::string& source);

}  // namespace dew::jinja
