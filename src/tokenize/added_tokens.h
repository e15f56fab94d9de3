// tokenizer.json's "added_tokens": strings matched in the text before pre-tokenization (leftmost,
// then longest, as the Rust crate's Aho-Corasick matcher does) and given their ids whole, with the
// lstrip / rstrip / single_word flags. Tokens flagged normalized are matched after the normalizer runs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dew::tokenize {

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

// A piece of text: an added token's id, or text (id < 0) still to be encoded.
struct Section {
  std::string_view text;
  int64_t id = -1;
  size_t offset = 0;  // where `text` starts in the text that was split
};

class AddedTokenMatcher {
 public:
  // `contents` are the strings to look for (an added token's content, or its normalized content).
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, const std::vector<std::string>& contents);
  // `text` cut into the added tokens found in it and the text between them (empty text dropped).
  std::vector<Section> split(std::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                       // index into tokens_
  };
  int32_t child(int32_t node, unsigned char byte) const;
  std::vector<Node> nodes_;
  std::vector<AddedToken> tokens_;
  std::array<bool, 256> starts_{};  // bytes some token starts with: most positions are skipped at once
};

}  // namespace dew::tokenize
