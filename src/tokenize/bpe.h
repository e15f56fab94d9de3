// tokenizer.json's "model" of type BPE: a vocabulary, ranked merges, and the options of the Rust
// crate (unk_token, fuse_unk, byte_fallback, ignore_merges, continuing_subword_prefix,
// end_of_word_suffix). Other model types (WordPiece, Unigram, WordLevel) are refused by name.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dew::tokenize {

// A heterogeneous string-keyed map: lookups by string_view without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  BpeModel(const nlohmann::json& spec, const std::string& source);

  // Appends the ids of one pre-tokenized piece to `ids`.
  void encode(std::string_view piece, std::vector<int64_t>& ids) const;

  const TokenIds& vocab() const { return vocab_; }
  const std::vector<std::string>& tokens() const { return tokens_; }  // by id; "" where no token has the id

 private:
  struct Merge {
    int32_t rank;
    int64_t merged_id;
  };
  void merge_word(std::string_view word, std::vector<int64_t>& ids) const;
  std::optional<int64_t> find(std::string_view token) const;

  TokenIds vocab_;
  std::vector<std::string> tokens_;
  std::unordered_map<uint64_t, Merge> merges_;  // key: left id << 32 | right id
  std::optional<int64_t> unk_id_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::string continuing_subword_prefix_, end_of_word_suffix_;
  std::array<int64_t, 256> byte_token_ids_{};  // <0xXX> for byte_fallback; -1 where missing

  // Words already merged (the Rust crate keeps the same cache): most text is made of few words.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace dew::tokenize
