// tokenizer.json's "model" of type BPE: a vocabulary, ranked merges, and the options of the Rust
// crate (unk_token, fuse_unk, byte_fallback, ignore_merges, continuing_subword_prefix,
// end_of_word_suffix). Other model types (WordPiece, Unigram, WordLevel) are refused by name.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dew::tokenize {

// How far past a vocabulary's entry count an id may lie: ids are dense in practice, gaps are allowed,
// and the id table (sized by the largest id) stays bounded by the file's size.
inline constexpr int64_t kVocabularyIdSlack = 65536;

// A heterogeneous string-keyed map: lookups by string_view without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;

// Merges by (left id, right id): open addressing in a power-of-two table, one probe sequence per
// lookup: std::unordered_map's node per entry made the lookup BPE's largest cost.
class MergeTable {
 public:
  struct Merge {
    int32_t rank = -1;  // -1: no merge
    int32_t merged_id = 0;
  };
  void reserve(size_t entries);
  void insert_or_assign(int32_t left, int32_t right, Merge merge);
  Merge find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    for (size_t slot = slot_of(key);; slot = (slot + 1) & mask_) {
      if (keys_[slot] == key) return values_[slot];
      if (keys_[slot] == kEmpty) return {};
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t pack(int32_t left, int32_t right) {
    return uint64_t(uint32_t(left)) << 32 | uint32_t(right);
  }
  size_t slot_of(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_; }
  std::vector<uint64_t> keys_;
  std::vector<Merge> values_;
  size_t mask_ = 0, size_ = 0;
};

class BpeModel {
 public:
  BpeModel(const nlohmann::json& spec, const std::string& source);

  // Appends the ids of one pre-tokenized piece to `ids`.
  void encode(std::string_view piece, std::vector<int64_t>& ids) const;

  const TokenIds& vocab() const { return vocab_; }
  const std::vector<std::string>& tokens() const { return tokens_; }  // by id; "" where no token has the id
  // The merges as the file lists them ("left right"; repeats kept), for a GGUF vocabulary.
  std::vector<std::string> merges() const;
  bool byte_fallback() const { return byte_fallback_; }

 private:
  void encode_word(std::string_view word, std::vector<int64_t>& ids) const;  // through the cache
  void merge_word(std::string_view word, std::vector<int64_t>& ids) const;
  bool metaspace_cannot_be_merged_into() const;
  std::optional<int64_t> find(std::string_view token) const;

  TokenIds vocab_;
  std::vector<std::string> tokens_;
  MergeTable merges_;
  std::vector<std::pair<int32_t, int32_t>> merge_order_;  // (left id, right id) in the file's order
  std::optional<int64_t> unk_id_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  bool split_before_metaspace_ = false;  // NOTE [metaspace segments] (bpe.cc)
  std::string continuing_subword_prefix_, end_of_word_suffix_;
  std::array<int64_t, 256> byte_token_ids_{};  // <0xXX> for byte_fallback; -1 where missing

  // Words already merged (the Rust crate keeps the same cache): most text is made of few words.
  mutable std::shared_mutex cache_mutex_;  // lookups share it: threads encoding at once rarely write
  mutable std::unordered_map<std::string, std::vector<int64_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace dew::tokenize
