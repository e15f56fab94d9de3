// Training a byte-level BPE (train_byte_level_bpe in dew/tokenizer.h): pre-tokenize with the very
// pre-tokenizer the written file declares, count the distinct pieces, then repeatedly merge the most
// frequent adjacent pair, updating only the pieces that hold it.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "dew/error.h"
#include "dew/tokenizer.h"
#include "tokenize/byte_level.h"
#include "tokenize/pre_tokenizers.h"
#include "tokenize/utf8.h"

namespace dew {

using namespace tokenize;

namespace {

// Llama 3's split pattern: contractions, words with one leading non-letter, numbers of up to three
// digits, punctuation runs, newlines, spaces.
constexpr const char* kSplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

nlohmann::ordered_json pre_tokenizer_spec() {
  return {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", kSplitPattern}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
}

uint64_t pair_key(int32_t left, int32_t right) {
  return uint64_t(uint32_t(left)) << 32 | uint32_t(right);
}

struct Word {
  std::vector<int32_t> symbols;
  int64_t count = 0;
};

class PairCounts {
 public:
  void add_word(const Word& w, int64_t sign, int32_t word_index) {
    for (size_t i = 0; i + 1 < w.symbols.size(); ++i) {
      const uint64_t key = pair_key(w.symbols[i], w.symbols[i + 1]);
      counts_[key] += sign * w.count;
      changed_.insert(key);
      if (sign > 0) where_[key].push_back(word_index);
    }
  }
  // Queues the new counts of every pair changed since the last call.
  void publish() {
    for (uint64_t key : changed_)
      if (counts_[key] > 0) heap_.push({counts_[key], key});
    changed_.clear();
  }
  // The most frequent pair (smaller ids first among equals) with its count; count 0 when none is left.
  std::pair<int64_t, uint64_t> best() {
    while (!heap_.empty()) {
      const auto [count, key] = heap_.top();
      if (counts_[key] == count) return {count, key};
      heap_.pop();  // stale: the pair's count changed after this entry was queued
    }
    return {0, 0};
  }
  void retire(uint64_t key) {
    heap_.pop();
    counts_[key] = 0;
  }
  std::vector<int32_t> take_words(uint64_t key) {
    std::vector<int32_t> words = std::move(where_[key]);
    where_.erase(key);
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    return words;
  }

 private:
  struct Entry {
    int64_t count;
    uint64_t key;
    bool operator<(const Entry& o) const { return count != o.count ? count < o.count : key > o.key; }
  };
  std::unordered_map<uint64_t, int64_t> counts_;
  std::unordered_map<uint64_t, std::vector<int32_t>> where_;  // words that held the pair (some no longer do)
  std::unordered_set<uint64_t> changed_;
  std::priority_queue<Entry> heap_;
};

}  // namespace

std::string train_byte_level_bpe(const std::vector<std::string_view>& documents,
                                 const BpeTrainOptions& options) {
  const int64_t specials = int64_t(options.special_tokens.size());
  DEW_REQUIRE(
      options.vocab_size >= 256 + specials,
      "[tokenizer train] vocab_size {} is too small: a byte-level BPE needs 256 byte tokens plus the {} "
      "special tokens",
      options.vocab_size, specials);
  DEW_REQUIRE(options.min_frequency >= 1, "[tokenizer train] min_frequency is {}; expected 1 or more",
              options.min_frequency);
  for (size_t i = 0; i < options.special_tokens.size(); ++i) {
    const std::string& special = options.special_tokens[i];
    DEW_REQUIRE(!special.empty(), "[tokenizer train] special token {} is empty; expected some text", i + 1);
    DEW_REQUIRE(std::find(options.special_tokens.begin(), options.special_tokens.begin() + long(i),
                          special) == options.special_tokens.begin() + long(i),
                "[tokenizer train] special token \"{}\" is given twice; expected each once", special);
  }

  // The vocabulary starts as the 256 byte tokens, in byte order.
  const ByteLevelAlphabet& alphabet = byte_level_alphabet();
  std::vector<std::string> tokens(alphabet.text_of_byte.begin(), alphabet.text_of_byte.end());
  std::unordered_map<std::string, int32_t> ids;
  for (int32_t b = 0; b < 256; ++b) ids[tokens[size_t(b)]] = b;

  // Distinct pieces and how often each occurs.
  const auto pre_tokenizer = make_pre_tokenizer(pre_tokenizer_spec(), "[tokenizer train]");
  std::unordered_map<std::string, int64_t> piece_counts;
  std::vector<std::string> pieces;
  for (std::string_view document : documents) {
    pieces.assign(1, make_valid_utf8(document));
    pre_tokenizer->split(pieces, true);
    for (std::string& piece : pieces) ++piece_counts[std::move(piece)];
  }
  std::vector<std::pair<std::string, int64_t>> sorted(piece_counts.begin(), piece_counts.end());
  std::sort(sorted.begin(), sorted.end());  // word order must not depend on the hash map's
  std::vector<Word> words;
  PairCounts pairs;
  for (const auto& [piece, count] : sorted) {
    Word w{{}, count};
    for (size_t pos = 0; pos < piece.size();) {
      const size_t start = pos;
      next_code_point(piece, pos);
      w.symbols.push_back(ids.at(piece.substr(start, pos - start)));
    }
    words.push_back(std::move(w));
    pairs.add_word(words.back(), +1, int32_t(words.size() - 1));
  }
  pairs.publish();

  std::vector<std::pair<int32_t, int32_t>> merges;
  const int64_t target = options.vocab_size - specials;
  while (int64_t(tokens.size()) < target) {
    const auto [count, key] = pairs.best();
    if (count < options.min_frequency) break;
    pairs.retire(key);
    const int32_t left = int32_t(key >> 32), right = int32_t(key & 0xffffffffu);
    const std::string merged = tokens[size_t(left)] + tokens[size_t(right)];
    auto [it, is_new] = ids.emplace(merged, int32_t(tokens.size()));
    if (is_new) tokens.push_back(merged);
    merges.emplace_back(left, right);
    for (int32_t index : pairs.take_words(key)) {
      Word& w = words[size_t(index)];
      pairs.add_word(w, -1, index);
      std::vector<int32_t> next;
      for (size_t i = 0; i < w.symbols.size(); ++i) {
        if (i + 1 < w.symbols.size() && w.symbols[i] == left && w.symbols[i + 1] == right) {
          next.push_back(it->second);
          ++i;
        } else {
          next.push_back(w.symbols[i]);
        }
      }
      w.symbols = std::move(next);
      pairs.add_word(w, +1, index);
    }
    pairs.publish();
  }

  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (size_t id = 0; id < tokens.size(); ++id) vocab[tokens[id]] = id;
  nlohmann::ordered_json merge_list = nlohmann::ordered_json::array();
  for (auto [left, right] : merges) merge_list.push_back(tokens[size_t(left)] + " " + tokens[size_t(right)]);
  nlohmann::ordered_json added = nlohmann::ordered_json::array();
  for (const std::string& special : options.special_tokens) {
    DEW_REQUIRE(!special.empty() && !ids.contains(special),
                "[tokenizer train] special token \"{}\" is empty or already a token", special);
    const int64_t id = int64_t(tokens.size()) + int64_t(added.size());
    added.push_back({{"id", id},
                     {"content", special},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
    vocab[special] = id;
  }
  const nlohmann::ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  const nlohmann::ordered_json file = {{"version", "1.0"},
                                       {"truncation", nullptr},
                                       {"padding", nullptr},
                                       {"added_tokens", added},
                                       {"normalizer", nullptr},
                                       {"pre_tokenizer", pre_tokenizer_spec()},
                                       {"post_processor", byte_level},
                                       {"decoder", byte_level},
                                       {"model",
                                        {{"type", "BPE"},
                                         {"dropout", nullptr},
                                         {"unk_token", nullptr},
                                         {"continuing_subword_prefix", nullptr},
                                         {"end_of_word_suffix", nullptr},
                                         {"fuse_unk", false},
                                         {"byte_fallback", false},
                                         {"ignore_merges", false},
                                         {"vocab", vocab},
                                         {"merges", merge_list}}}};
  return file.dump(1) + "\n";
}

}  // namespace dew
