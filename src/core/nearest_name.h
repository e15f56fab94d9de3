// "Did you mean": the known name nearest to a mistyped one, for messages about unknown keys and flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dew {

// The candidate with the fewest single-character edits from `word` (Levenshtein; the first of equals),
// when it is near enough to be what was meant: at most max(2, |word| / 3) edits. "" otherwise.
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace dew
