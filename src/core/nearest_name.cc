// nearest_name.h: edit distances by one row of the Levenshtein table.
#include "core/nearest_name.h"

#include <algorithm>
#include <cstdint>

namespace dew {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string* nearest = nullptr;
  size_t best = SIZE_MAX;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best) best = d, nearest = &c;
  }
  return nearest && best <= std::max<size_t>(2, word.size() / 3) ? *nearest : std::string();
}

}  // namespace dew
