// Matching added tokens in text (added_tokens.h): a byte trie, leftmost-longest.
#include "tokenize/added_tokens.h"

#include <algorithm>

#include "tokenize/utf8.h"

namespace dew::tokenize {
namespace {

bool is_word_char(char32_t c) {  // for single_word: letters, digits and '_' in ASCII and beyond
  return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= 0x80 && !is_white_space(c));
}

// The code point just before byte `end` of `text` (end > 0).
char32_t code_point_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  return next_code_point(text, start);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens,
                                     const std::vector<std::string>& contents)
    : tokens_(tokens) {
  nodes_.emplace_back();
  for (size_t t = 0; t < contents.size(); ++t) {
    if (contents[t].empty()) continue;
    int32_t node = 0;
    for (unsigned char byte : contents[t]) {
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& children = nodes_[node].children;
        children.insert(std::upper_bound(children.begin(), children.end(), std::make_pair(byte, int32_t(-1))),
                        {byte, next});
        nodes_.emplace_back();
      }
      node = next;
    }
    nodes_[node].token = static_cast<int32_t>(t);
    starts_[static_cast<unsigned char>(contents[t][0])] = true;
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  const auto& children = nodes_[node].children;
  auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t(-1)));
  return it != children.end() && it->first == byte ? it->second : -1;
}

std::vector<Section> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Section> sections;
  size_t done = 0;  // text before this is in `sections`
  size_t pos = 0;
  while (pos < text.size()) {
    if (!starts_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    int32_t node = 0, found = -1;
    size_t end = pos;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      if (nodes_[node].token >= 0) found = nodes_[node].token, end = i + 1;
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[found];
    if (token.single_word) {
      const bool alone =
          (pos == 0 || !is_word_char(code_point_before(text, pos))) && (end == text.size() || [&] {
            size_t at = end;
            return !is_word_char(next_code_point(text, at));
          }());
      if (!alone) {
        pos = end;
        continue;
      }
    }
    size_t start = pos;
    if (token.lstrip) start = done + trim_end(text.substr(done, pos - done)).size();
    if (token.rstrip) end = text.size() - trim_start(text.substr(end)).size();
    if (start > done) sections.push_back({text.substr(done, start - done), -1, done});
    sections.push_back({text.substr(start, end - start), token.id, start});
    done = pos = end;
  }
  if (done < text.size()) sections.push_back({text.substr(done), -1, done});
  return sections;
}

}  // namespace dew::tokenize
