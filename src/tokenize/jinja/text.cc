// Python's str operations over UTF-8 (text.h).
#include "tokenize/jinja/text.h"

#include "tokenize/jinja/limits.h"

#include <utf8proc.h>

#include "tokenize/utf8.h"

namespace dew::jinja {

using tokenize::append_utf8;
using tokenize::next_code_point;

bool is_python_space(char32_t c) {
  return tokenize::is_white_space(c) || (c >= 0x1C && c <= 0x1F);
}

namespace {

std::u32string decode(std::string_view text) {
  std::u32string out;
  for (size_t pos = 0; pos < text.size();) out += next_code_point(text, pos);
  return out;
}

std::string encode(std::u32string_view text) {
  std::string out;
  for (char32_t c : text) append_utf8(out, c);
  return out;
}

char32_t to_upper(char32_t c) {
  return char32_t(utf8proc_toupper(utf8proc_int32_t(c)));
}
char32_t to_lower(char32_t c) {
  return char32_t(utf8proc_tolower(utf8proc_int32_t(c)));
}
bool is_letter(char32_t c) {
  const auto category = utf8proc_category(utf8proc_int32_t(c));
  return category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO;
}

}  // namespace

std::string strip_text(std::string_view text, std::optional<std::string_view> chars, bool left, bool right) {
  const std::u32string code_points = decode(text);
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  const auto strips = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : is_python_space(c);
  };
  size_t begin = 0, end = code_points.size();
  if (left)
    while (begin < end && strips(code_points[begin])) ++begin;
  if (right)
    while (end > begin && strips(code_points[end - 1])) --end;
  return encode(std::u32string_view(code_points).substr(begin, end - begin));
}

std::vector<std::string> split_text(std::string_view text, std::optional<std::string_view> sep,
                                    int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    // Splitting from the right with a limit is the left split of the reversed problem; find the
    // separators right to left.
    std::vector<size_t> cuts;
    if (from_right) {
      for (size_t end = text.size(); maxsplit < 0 || int64_t(cuts.size()) < maxsplit;) {
        if (end < sep->size()) break;
        const size_t at = text.rfind(*sep, end - sep->size());
        if (at == std::string_view::npos) break;
        cuts.insert(cuts.begin(), at);
        if (at == 0) break;
        end = at;
      }
    } else {
      for (size_t from = 0; maxsplit < 0 || int64_t(cuts.size()) < maxsplit;) {
        const size_t at = text.find(*sep, from);
        if (at == std::string_view::npos) break;
        cuts.push_back(at);
        from = at + sep->size();
      }
    }
    size_t begin = 0;
    for (size_t cut : cuts) {
      parts.emplace_back(text.substr(begin, cut - begin));
      begin = cut + sep->size();
    }
    parts.emplace_back(text.substr(begin));
    return parts;
  }
  const std::u32string code_points = decode(text);
  std::vector<std::pair<size_t, size_t>> words;
  for (size_t i = 0; i < code_points.size();) {
    while (i < code_points.size() && is_python_space(code_points[i])) ++i;
    if (i == code_points.size()) break;
    size_t j = i;
    while (j < code_points.size() && !is_python_space(code_points[j])) ++j;
    words.emplace_back(i, j);
    i = j;
  }
  if (maxsplit >= 0 && int64_t(words.size()) > maxsplit + 1) {
    // The last part runs to the end of the text, trailing whitespace and all (from the right: the
    // first part runs from its start), as CPython's split does.
    const size_t keep = size_t(maxsplit);
    if (from_right) {
      const size_t first_kept = words.size() - keep;
      words[first_kept - 1].first = 0;
      words.erase(words.begin(), words.begin() + std::ptrdiff_t(first_kept - 1));
    } else {
      words[keep].second = code_points.size();
      words.resize(keep + 1);
    }
  }
  for (auto [begin, end] : words)
    parts.push_back(encode(std::u32string_view(code_points).substr(begin, end - begin)));
  return parts;
}

std::string upper_text(std::string_view text) {
  std::u32string code_points = decode(text);
  for (char32_t& c : code_points) c = to_upper(c);
  return encode(code_points);
}

std::string lower_text(std::string_view text) {
  std::u32string code_points = decode(text);
  for (char32_t& c : code_points) c = to_lower(c);
  return encode(code_points);
}

std::string capitalize_text(std::string_view text) {
  std::u32string code_points = decode(text);
  for (size_t i = 0; i < code_points.size(); ++i)
    code_points[i] = i == 0 ? to_upper(code_points[i]) : to_lower(code_points[i]);
  return encode(code_points);
}

std::string title_text(std::string_view text) {
  std::u32string code_points = decode(text);
  bool previous_letter = false;
  for (char32_t& c : code_points) {
    const bool letter = is_letter(c);
    c = letter ? (previous_letter ? to_lower(c) : to_upper(c)) : c;
    previous_letter = letter;
  }
  return encode(code_points);
}

std::string title_words(std::string_view text) {
  std::u32string code_points = decode(text);
  bool word_start = true;
  for (char32_t& c : code_points) {
    const bool separator =
        is_python_space(c) || c == U'-' || c == U'(' || c == U'{' || c == U'[' || c == U'<';
    if (!separator) c = word_start ? to_upper(c) : to_lower(c);
    word_start = separator;
  }
  return encode(code_points);
}

bool all_in_class(std::string_view text, CharClass kind) {
  if (text.empty()) return false;
  for (size_t pos = 0; pos < text.size();) {
    const char32_t c = next_code_point(text, pos);
    const bool digit = utf8proc_category(utf8proc_int32_t(c)) == UTF8PROC_CATEGORY_ND;
    const bool in = kind == CharClass::space   ? is_python_space(c)
                    : kind == CharClass::digit ? digit
                    : kind == CharClass::alpha ? is_letter(c)
                                               : is_letter(c) || digit;
    if (!in) return false;
  }
  return true;
}

std::string replace_text(std::string_view text, std::string_view old, std::string_view replacement,
                         int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {  // Python inserts the replacement around every code point
    size_t pos = 0;
    while (pos <= text.size()) {
      if (count >= 0 && done >= count) break;
      out += replacement, ++done;
      check_text_size(out.size(), "a replace's result");
      if (pos == text.size()) return out;
      const size_t size = tokenize::utf8_length(static_cast<unsigned char>(text[pos]));
      out += text.substr(pos, size);
      pos += size;
    }
    return out + std::string(text.substr(std::min(pos, text.size())));
  }
  size_t from = 0;
  for (size_t at; (count < 0 || done < count) && (at = text.find(old, from)) != std::string_view::npos;
       ++done) {
    out += text.substr(from, at - from);
    out += replacement;
    check_text_size(out.size(), "a replace's result");
    from = at + old.size();
  }
  return out + std::string(text.substr(from));
}

}  // namespace dew::jinja
