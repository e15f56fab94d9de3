// UTF-8 as the tokenizers need it: code points out of well-formed text, code points back in, the
// lossy repair of ill-formed input (WHATWG's decoder: each maximal ill-formed subpart becomes one
// U+FFFD), and Unicode's White_Space property (what Rust's char::is_whitespace tests).
#pragma once

#include <string>
#include <string_view>

namespace dew::tokenize {

// The code point at text[pos] and advances pos past it; `text` must be well-formed UTF-8.
inline char32_t next_code_point(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return pos += 1, lead;
  if (lead < 0xE0) return pos += 2, char32_t((lead & 0x1F) << 6 | (byte(pos - 1) & 0x3F));
  if (lead < 0xF0) {
    pos += 3;
    return char32_t((lead & 0x0F) << 12 | (byte(pos - 2) & 0x3F) << 6 | (byte(pos - 1) & 0x3F));
  }
  pos += 4;
  return char32_t((lead & 0x07) << 18 | (byte(pos - 3) & 0x3F) << 12 | (byte(pos - 2) & 0x3F) << 6 |
                  (byte(pos - 1) & 0x3F));
}

// The number of bytes of the UTF-8 sequence that starts with `lead` (1 for a continuation byte).
inline size_t utf8_length(unsigned char lead) {
  return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

void append_utf8(std::string& out, char32_t code_point);

// `text` with each ill-formed subpart replaced by U+FFFD (unchanged when it is well-formed).
std::string make_valid_utf8(std::string_view text);

bool is_white_space(char32_t code_point);

// `text` without White_Space code points at its start / end.
std::string_view trim_start(std::string_view text);
std::string_view trim_end(std::string_view text);

}  // namespace dew::tokenize
