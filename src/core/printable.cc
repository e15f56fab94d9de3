// printable(): one pass; bytes 0x80 and up pass through (UTF-8 is printed as the terminal reads it).
#include "core/printable.h"

#include <fmt/format.h>

namespace dew {

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

}  // namespace dew
