// Template source → tokens, with Jinja2's whitespace rules as transformers configures them for chat
// templates: trim_blocks and lstrip_blocks on, `-` and `+` modifiers on tags, newlines normalized to
// "\n" and one trailing newline dropped (keep_trailing_newline off). Comments vanish here; a raw
// block comes out as text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dew::jinja {

enum class TokenKind {
  text,            // template text, printed as is
  variable_begin,  // {{
  variable_end,    // }}
  block_begin,     // {%
  block_end,       // %}
  name,
  string,  // its value, escapes resolved
  integer,
  floating,
  op,   // + - * / // % ** ~ ( ) [ ] { } , . : | = == != < <= > >=
  end,  // past the last token
};

struct Token {
  TokenKind kind;
  std::string text;
  int line;  // 1-based line of the source where the token starts
};

// Errors (an unclosed tag, string or comment, a character no token starts with) are dew::Error
// naming `source` and the line.
std::vector<Token> lex_template(std::string_view template_source, const std::string& source);

}  // namespace dew::jinja
