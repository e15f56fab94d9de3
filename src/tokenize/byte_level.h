// GPT-2's byte-level alphabet: each of the 256 byte values as one printable code point (the bytes
// that print as themselves keep their value; the rest are moved to U+0100 and up), so that any byte
// string is a string of "characters" a BPE vocabulary can hold.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tokenize/utf8.h"

namespace dew::tokenize {

struct ByteLevelAlphabet {
  std::array<char32_t, 256> code_point_of_byte{};
  std::array<std::string, 256> text_of_byte;         // the code point's UTF-8
  std::array<int16_t, 256 + 68> byte_of_code_point;  // -1: not in the alphabet

  ByteLevelAlphabet() {
    const auto prints_as_itself = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    byte_of_code_point.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      code_point_of_byte[b] = prints_as_itself(b) ? char32_t(b) : next++;
      append_utf8(text_of_byte[b], code_point_of_byte[b]);
      byte_of_code_point[code_point_of_byte[b]] = int16_t(b);
    }
  }

  // The byte a code point stands for; nullopt for a code point outside the alphabet.
  std::optional<unsigned char> byte_of(char32_t c) const {
    if (c >= byte_of_code_point.size() || byte_of_code_point[c] < 0) return std::nullopt;
    return static_cast<unsigned char>(byte_of_code_point[c]);
  }

  std::string encode(std::string_view bytes) const {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) out += text_of_byte[b];
    return out;
  }
};

inline const ByteLevelAlphabet& byte_level_alphabet() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

}  // namespace dew::tokenize
