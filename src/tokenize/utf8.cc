// UTF-8 helpers for the tokenizers (utf8.h).
#include "tokenize/utf8.h"

#include "io/json.h"

namespace dew::tokenize {

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | c >> 6);
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | c >> 12);
    out += char(0x80 | (c >> 6 & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | c >> 18);
    out += char(0x80 | (c >> 12 & 0x3F));
    out += char(0x80 | (c >> 6 & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string make_valid_utf8(std::string_view text) {
  if (invalid_utf8_at(text) == std::string_view::npos) return std::string(text);
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    size_t needed = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte (WHATWG's bounds)
    if (lead < 0x80) {
      out += char(lead);
      ++i;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      needed = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      needed = 2;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      needed = 3;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      out += kReplacement;  // a continuation byte or a byte that never starts a sequence
      ++i;
      continue;
    }
    size_t seen = 1;
    while (seen <= needed && i + seen < text.size()) {
      const unsigned char b = static_cast<unsigned char>(text[i + seen]);
      if (b < low || b > high) break;
      low = 0x80, high = 0xBF;
      ++seen;
    }
    if (seen == needed + 1) {
      out.append(text.substr(i, seen));
    } else {
      out += kReplacement;  // the maximal subpart is consumed; the byte that broke it is read again
    }
    i += seen;
  }
  return out;
}

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::string_view trim_start(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = pos;
    if (!is_white_space(next_code_point(text, next))) break;
    pos = next;
  }
  return text.substr(pos);
}

std::string_view trim_end(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!is_white_space(next_code_point(text, pos))) break;
    end = start;
  }
  return text.substr(0, end);
}

}  // namespace dew::tokenize
