// Jinja2's lexer for chat templates: text between tags, tokens inside them, whitespace control.
#include "tokenize/jinja/lexer.h"

#include <algorithm>
#include <cctype>

#include "dew/error.h"
#include "tokenize/utf8.h"

namespace dew::jinja {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// "\r\n" and "\r" become "\n" (Jinja's newline_sequence), and one final newline is dropped.
std::string normalize_newlines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& source)
      : text_(normalize_newlines(text)), source_(source) {}

  std::vector<Token> run() {
    while (pos_ < text_.size()) {
      const size_t start = find_tag(pos_);
      std::string_view data(text_.data() + pos_, start - pos_);
      if (start == text_.size()) {
        emit_text(data, line_at(pos_));
        break;
      }
      const char kind = text_[start + 1];  // '{', '%' or '#'
      const char modifier = start + 2 < text_.size() ? text_[start + 2] : '\0';
      if (modifier == '-') {
        while (!data.empty() && is_space(data.back())) data.remove_suffix(1);
      } else if (kind != '{' && modifier != '+') {
        data = strip_line_indent(data, start);
      }
      emit_text(data, line_at(pos_));
      pos_ = start + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
      if (kind == '#')
        skip_comment(start);
      else if (kind == '%' && raw_block())
        continue;
      else
        lex_tag(kind == '{' ? TokenKind::variable_begin : TokenKind::block_begin, start);
    }
    tokens_.push_back({TokenKind::end, "", line_at(text_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < text_.size(); ++i)
      if (text_[i] == '{' && (text_[i + 1] == '{' || text_[i + 1] == '%' || text_[i + 1] == '#')) return i;
    return text_.size();
  }

  int line_at(size_t pos) {
    for (; counted_ < pos && counted_ < text_.size(); ++counted_)
      if (text_[counted_] == '\n') ++line_;
    return line_;
  }

  [[noreturn]] void error(size_t pos, const std::string& what) {
    const auto end = text_.begin() + std::ptrdiff_t(std::min(pos, text_.size()));
    fail("[chat_template] {} line {}: {}", source_, 1 + std::count(text_.begin(), end, '\n'), what);
  }

  // lstrip_blocks: spaces and tabs between the start of a line and a block or comment tag go.
  std::string_view strip_line_indent(std::string_view data, size_t tag_start) const {
    size_t i = tag_start;
    while (i > 0 && (text_[i - 1] == ' ' || text_[i - 1] == '\t')) --i;
    if (i > 0 && text_[i - 1] != '\n') return data;
    const size_t strip = tag_start - i;
    return data.substr(0, data.size() - std::min(strip, data.size()));
  }

  void emit_text(std::string_view data, int line) {
    if (!data.empty()) tokens_.push_back({TokenKind::text, std::string(data), line});
  }

  // After a tag's end: `-` strips all following whitespace; a block or comment end without it drops
  // one newline (trim_blocks).
  void after_tag_end(bool strip, bool block) {
    if (strip) {
      while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    } else if (block && pos_ < text_.size() && text_[pos_] == '\n') {
      ++pos_;
    }
  }

  void skip_comment(size_t start) {
    const size_t close = text_.find("#}", pos_);
    if (close == std::string::npos) error(start, "a comment opened with {# is never closed with #}");
    pos_ = close + 2;
    after_tag_end(close > 0 && text_[close - 1] == '-', true);
  }

  // {% raw %} ... {% endraw %}: the text between, untouched. Returns false when the tag is not raw.
  bool raw_block() {
    size_t i = pos_;
    while (i < text_.size() && is_space(text_[i])) ++i;
    if (text_.compare(i, 3, "raw") != 0 || (i + 3 < text_.size() && is_name_char(text_[i + 3]))) return false;
    const int line = line_at(pos_);
    i += 3;
    while (i < text_.size() && is_space(text_[i])) ++i;
    const bool strip_after_open = text_.compare(i, 1, "-") == 0;
    if (strip_after_open) ++i;
    if (text_.compare(i, 2, "%}") != 0) error(pos_, "expected %} after 'raw'");
    pos_ = i + 2;
    after_tag_end(strip_after_open, true);
    for (size_t search = pos_;;) {
      const size_t open = text_.find("{%", search);
      if (open == std::string::npos) error(pos_, "a {% raw %} block is never closed with {% endraw %}");
      size_t j = open + 2;
      const bool strip_before_close = j < text_.size() && text_[j] == '-';
      if (strip_before_close || (j < text_.size() && text_[j] == '+')) ++j;
      while (j < text_.size() && is_space(text_[j])) ++j;
      if (text_.compare(j, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      j += 6;
      while (j < text_.size() && is_space(text_[j])) ++j;
      const bool strip_after_close = text_.compare(j, 1, "-") == 0;
      if (strip_after_close) ++j;
      if (text_.compare(j, 2, "%}") != 0) error(open, "expected %} after 'endraw'");
      std::string_view data(text_.data() + pos_, open - pos_);
      if (strip_before_close)
        while (!data.empty() && is_space(data.back())) data.remove_suffix(1);
      emit_text(data, line);
      pos_ = j + 2;
      after_tag_end(strip_after_close, true);
      return true;
    }
  }

  void lex_tag(TokenKind begin, size_t start) {
    const bool block = begin == TokenKind::block_begin;
    tokens_.push_back({begin, "", line_at(start)});
    int depth = 0;  // open ( [ {: a } inside a literal does not end a {{ }} tag
    for (;;) {
      while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
      if (pos_ >= text_.size())
        error(start, block ? "a tag opened with {% is never closed with %}"
                           : "a tag opened with {{ is never closed with }}");
      const std::string_view rest(text_.data() + pos_, text_.size() - pos_);
      const std::string_view close = block ? "%}" : "}}";
      const bool strip = rest.size() > 2 && rest[0] == '-' && rest.substr(1, 2) == close;
      if (depth == 0 && (strip || rest.substr(0, 2) == close)) {
        tokens_.push_back({block ? TokenKind::block_end : TokenKind::variable_end, "", line_at(pos_)});
        pos_ += strip ? 3 : 2;
        after_tag_end(strip, block);
        return;
      }
      lex_token(depth);
    }
  }

  void lex_token(int& depth) {
    const int line = line_at(pos_);
    const char c = text_[pos_];
    if (is_name_start(c)) {
      const size_t begin = pos_;
      while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
      tokens_.push_back({TokenKind::name, text_.substr(begin, pos_ - begin), line});
    } else if (is_digit(c)) {
      lex_number(line);
    } else if (c == '\'' || c == '"') {
      tokens_.push_back({TokenKind::string, lex_string(c), line});
    } else {
      static constexpr std::string_view two[] = {"**", "//", "==", "!=", "<=", ">="};
      for (std::string_view op : two)
        if (text_.compare(pos_, 2, op) == 0) {
          tokens_.push_back({TokenKind::op, std::string(op), line});
          pos_ += 2;
          return;
        }
      if (std::string_view("+-*/%~()[]{},.:|=<>").find(c) == std::string_view::npos)
        error(pos_, fmt::format("unexpected character '{}' inside a tag", c));
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      tokens_.push_back({TokenKind::op, std::string(1, c), line});
      ++pos_;
    }
  }

  void lex_number(int line) {
    const size_t begin = pos_;
    const auto digits = [&] {
      while (pos_ < text_.size() && (is_digit(text_[pos_]) || text_[pos_] == '_')) ++pos_;
    };
    digits();
    bool floating = false;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && is_digit(text_[pos_ + 1])) {
      floating = true;
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t i = pos_ + 1;
      if (i < text_.size() && (text_[i] == '+' || text_[i] == '-')) ++i;
      if (i < text_.size() && is_digit(text_[i])) {
        floating = true;
        pos_ = i;
        digits();
      }
    }
    std::string number;
    for (size_t i = begin; i < pos_; ++i)
      if (text_[i] != '_') number += text_[i];
    tokens_.push_back({floating ? TokenKind::floating : TokenKind::integer, number, line});
  }

  // Python's unicode-escape rules, as Jinja applies them to string literals.
  std::string lex_string(char quote) {
    const size_t start = pos_++;
    std::string out;
    const auto hex = [&](size_t count) -> char32_t {
      uint32_t value = 0;
      for (size_t k = 0; k < count; ++k, ++pos_) {
        if (pos_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[pos_])))
          error(start, fmt::format("a \\x, \\u or \\U escape needs {} hex digits", count));
        const char h = text_[pos_];
        value = value * 16 + uint32_t(is_digit(h) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      if (value > 0x10FFFF || (value >= 0xD800 && value < 0xE000))
        error(start, fmt::format("the escape \\U{:08x} is not a Unicode scalar value", value));
      return char32_t(value);
    };
    for (;;) {
      if (pos_ >= text_.size()) error(start, "a string literal is never closed");
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) error(start, "a string literal is never closed");
      const char e = text_[pos_++];
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
          tokenize::append_utf8(out, hex(2));
          break;
        case 'u':
          tokenize::append_utf8(out, hex(4));
          break;
        case 'U':
          tokenize::append_utf8(out, hex(8));
          break;
        default:
          if (e >= '0' && e <= '7') {
            uint32_t value = uint32_t(e - '0');
            for (int k = 0; k < 2 && pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '7'; ++k)
              value = value * 8 + uint32_t(text_[pos_++] - '0');
            tokenize::append_utf8(out, char32_t(value));
          } else {
            out += '\\';  // an unknown escape stays as written
            out += e;
          }
      }
    }
  }

  std::string text_;
  const std::string& source_;
  size_t pos_ = 0;
  size_t counted_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_template(std::string_view template_source, const std::string& source) {
  return Lexer(template_source, source).run();
}

}  // namespace dew::jinja
