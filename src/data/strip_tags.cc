// The strip_tags stage: text of word/tag tokens (the Brown corpus, tagged exports of treebanks)
// back to plain text. Each whitespace-separated token loses its tag (from the last separator on);
// the corpus's punctuation conventions are undone: `` and '' become double quotes, closing marks
// join the word before them and opening marks the word after. Line breaks are kept.
#include <dew/error.h>

#include "data/stage.h"

namespace dew::data::detail {
namespace {

// Marks written with no space before them (they close up to the previous word) ...
bool closes_up(std::string_view w) {
  static constexpr std::string_view marks[] = {".", ",", ";",  ":",  "?",   "!",
                                               ")", "]", "''", "'s", "n't", "%"};
  for (std::string_view m : marks)
    if (w == m) return true;
  return false;
}
// ... and with no space after them.
bool opens(std::string_view w) {
  return w == "``" || w == "(" || w == "[" || w == "$";
}

std::string_view untagged(std::string_view token, char separator) {
  const size_t at = token.rfind(separator);
  return at == std::string_view::npos || at == 0 ? token : token.substr(0, at);
}

std::string strip_line(std::string_view line, char separator) {
  std::string out;
  bool glue_next = true;  // nothing before the first word
  for (size_t at = 0; at < line.size();) {
    const size_t begin = line.find_first_not_of(" \t\r", at);
    if (begin == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t\r", begin);
    if (end == std::string_view::npos) end = line.size();
    at = end;
    const std::string_view word = untagged(line.substr(begin, end - begin), separator);
    if (!glue_next && !closes_up(word)) out += ' ';
    out += word == "``" || word == "''" ? std::string_view("\"") : word;
    glue_next = opens(word);
  }
  return out;
}

}  // namespace

std::unique_ptr<Stage> make_strip_tags(std::unique_ptr<Stage> upstream, const StripTagsOptions& options) {
  DEW_REQUIRE(options.separator.size() == 1,
              "[data] strip_tags: separator \"{}\"; expected one character (\"/\" for the Brown corpus)",
              options.separator);
  const char separator = options.separator[0];
  Json d = {{"stage", "strip_tags"}, {"separator", options.separator}};
  return make_described_map(std::move(upstream), std::move(d), [separator](Record r) {
    std::string text;
    const std::string_view in = r.text;
    for (size_t at = 0; at <= in.size();) {
      size_t newline = in.find('\n', at);
      if (newline == std::string_view::npos) newline = in.size();
      const std::string line = strip_line(in.substr(at, newline - at), separator);
      at = newline + 1;
      if (line.empty()) continue;  // blank lines dropped: a record's sentences become its lines
      if (!text.empty()) text += '\n';
      text += line;
    }
    r.text = std::move(text);
    return r;
  });
}

}  // namespace dew::data::detail
