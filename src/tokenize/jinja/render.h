// Renders a parsed chat template: Jinja2's semantics for scoping (a for loop's body and a macro each
// have their own; `set` inside them does not leak out, which is why templates use namespace()),
// Undefined, Python's operators and truth, and its output (str() of each printed value).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tokenize/jinja/ast.h"

namespace dew::jinja {

struct RenderResult {
  std::string text;
  // Byte ranges [begin, end) of `text` written inside {% generation %} blocks: the assistant's
  // turns, for a loss mask.
  std::vector<std::pair<size_t, size_t>> generation_spans;
};

// `variables` are the template's globals (messages, add_generation_prompt, bos_token, ...). A
// runtime error or a raise_exception call is a dew::Error naming the template and the line.
RenderResult render_template(const Template& parsed, const ValueDict& variables);

}  // namespace dew::jinja
