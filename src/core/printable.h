// Text from a file, made safe to print on a terminal: control characters (C0, DEL) as escapes
// (\n, \t, \x1b), everything else as it is. For names read from input (tensor names, keys) that a
// message or a listing shows: an escape sequence in a file must not recolour or rewrite the user's terminal.
#pragma once

#include <string>
#include <string_view>

namespace dew {

std::string printable(std::string_view text);

}  // namespace dew
