// BPE as the Rust tokenizers crate runs it (bpe.h): each code point of a piece becomes a symbol (its
// vocabulary id, or byte-fallback ids, or unk); then, while any adjacent pair has a merge, the pair of
// lowest rank — the leftmost among equals — is merged.
#include "tokenize/bpe.h"

#include <queue>

#include "dew/error.h"
#include "io/json.h"
#include "tokenize/utf8.h"

namespace dew::tokenize {
namespace {

constexpr size_t kCacheEntries = 10000;     // the Rust crate's default capacity
constexpr size_t kLongestCachedWord = 256;  // longer pieces (a SentencePiece line) are not kept

}  // namespace

void MergeTable::reserve(size_t entries) {
  size_t capacity = 16;
  while (capacity < 2 * entries) capacity *= 2;  // at most half full: short probe sequences
  keys_.assign(capacity, kEmpty);
  values_.assign(capacity, {});
  mask_ = capacity - 1;
  size_ = 0;
}

void MergeTable::insert_or_assign(int32_t left, int32_t right, Merge merge) {
  if (2 * (size_ + 1) > keys_.size()) {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<Merge> values = std::move(values_);
    reserve(std::max<size_t>(size_ + 1, keys.size()));
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty)
        insert_or_assign(int32_t(keys[i] >> 32), int32_t(keys[i] & 0xffffffffu), values[i]);
  }
  const uint64_t key = pack(left, right);
  size_t slot = slot_of(key);
  while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask_;
  if (keys_[slot] == kEmpty) ++size_;
  keys_[slot] = key;
  values_[slot] = merge;
}

BpeModel::BpeModel(const nlohmann::json& spec, const std::string& source) {
  const std::string where = source + " model";
  const JsonFields f{spec, where};
  // Without "type", the tokenizers crate takes the first model kind whose fields are all there; of
  // those, Dew has BPE, which needs "merges".
  DEW_REQUIRE(
      f.has("type") || f.has("merges"),
      "{}: no \"type\" and no \"merges\"; expected a BPE model (\"type\": \"BPE\", \"vocab\", \"merges\"), "
      "the one model kind Dew implements",
      where);
  const std::string type = f.text_or("type", "BPE");
  DEW_REQUIRE(type == "BPE", "{}: the model type \"{}\" is not implemented by Dew (supported: BPE)", where,
              type);
  DEW_REQUIRE(
      !f.has("dropout") || f.number_or("dropout", 0) == 0,
      "{}: \"dropout\" is {}; Dew encodes deterministically and implements no BPE dropout (expected null)",
      where, spec["dropout"].dump());
  const nlohmann::json& vocab = json_member(spec, "vocab", nlohmann::json::value_t::object, where);
  // The id table is sized by the largest id, so ids far past the entry count (a hostile 2^31 - 1) are
  // refused before it is: a vocabulary's ids are dense, with room for gaps.
  const int64_t id_limit = int64_t(vocab.size()) + kVocabularyIdSlack;
  for (const auto& [token, id] : vocab.items()) {
    DEW_REQUIRE(
        id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < id_limit,
        "{}: the vocab entry \"{}\" has id {}; expected a non-negative integer below {} (its {} entries "
        "and room for gaps)",
        where, token, id.dump(), id_limit, vocab.size());
    const int64_t value = id.get<int64_t>();
    vocab_.emplace(token, value);
    if (size_t(value) >= tokens_.size()) tokens_.resize(size_t(value) + 1);
    tokens_[size_t(value)] = token;
  }
  continuing_subword_prefix_ = f.text_or("continuing_subword_prefix", "");
  end_of_word_suffix_ = f.text_or("end_of_word_suffix", "");
  fuse_unk_ = f.flag_or("fuse_unk", false);
  byte_fallback_ = f.flag_or("byte_fallback", false);
  ignore_merges_ = f.flag_or("ignore_merges", false);
  if (f.has("unk_token")) {
    const std::string unk = f.text_or("unk_token", "");
    unk_id_ = find(unk);
    DEW_REQUIRE(unk_id_.has_value(), "{}: \"unk_token\" is \"{}\", which is not in the vocab", where, unk);
  }
  for (int b = 0; b < 256; ++b) {
    byte_token_ids_[b] = find(fmt::format("<0x{:02X}>", b)).value_or(-1);
  }
  split_before_metaspace_ =
      continuing_subword_prefix_.empty() && end_of_word_suffix_.empty() && metaspace_cannot_be_merged_into();

  // Merges: "left right" strings (older files) or [left, right] pairs (newer ones).
  const auto& merges = json_member(spec, "merges", nlohmann::json::value_t::array, where);
  merges_.reserve(merges.size());
  merge_order_.reserve(merges.size());
  int32_t rank = 0;
  for (const auto& merge : merges) {
    std::string left, right;
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      DEW_REQUIRE(space != std::string::npos && text.find(' ', space + 1) == std::string::npos,
                  "{}: merge {} is \"{}\"; expected two tokens separated by one space", where, rank, text);
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else {
      DEW_REQUIRE(merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string(),
                  "{}: merge {} is {}; expected \"left right\" or [\"left\", \"right\"]", where, rank,
                  merge.dump());
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    }
    const auto left_id = find(left), right_id = find(right);
    std::string merged =
        left + right.substr(std::min(right.size(), right.starts_with(continuing_subword_prefix_)
                                                       ? continuing_subword_prefix_.size()
                                                       : 0));
    const auto merged_id = find(merged);
    DEW_REQUIRE(left_id && right_id && merged_id,
                "{}: merge {} (\"{}\" + \"{}\") names a token that is not in the vocab", where, rank, left,
                right);
    // A repeated merge keeps its last rank, as the Rust crate's (and tokenizers.js') maps do.
    merges_.insert_or_assign(int32_t(*left_id), int32_t(*right_id), {rank, int32_t(*merged_id)});
    merge_order_.emplace_back(int32_t(*left_id), int32_t(*right_id));
    ++rank;
  }
}

std::vector<std::string> BpeModel::merges() const {
  std::vector<std::string> out;
  out.reserve(merge_order_.size());
  for (const auto& [left, right] : merge_order_)
    out.push_back(tokens_[size_t(left)] + " " + tokens_[size_t(right)]);
  return out;
}

std::optional<int64_t> BpeModel::find(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

// NOTE [metaspace segments]
// SentencePiece-style files (Llama 2, Mistral) have no pre-tokenizer: a whole line is one BPE word,
// too long to cache and slow to merge. When no vocabulary token holds "▁" right after another
// character than "▁", no merge can join the text before such a "▁" to the text from it on, so
// merging each segment alone gives the same tokens as merging the line — and segments are words
// that repeat, which the cache serves. The Brown corpus fixtures check it against tokenizers.js.
bool BpeModel::metaspace_cannot_be_merged_into() const {
  static constexpr std::string_view kMetaspace = "\xE2\x96\x81";
  if (!vocab_.contains(kMetaspace)) return false;
  for (const auto& [token, id] : vocab_) {
    for (size_t at = token.find(kMetaspace, 1); at != std::string::npos; at = token.find(kMetaspace, at + 1))
      if (at < kMetaspace.size() || token.compare(at - kMetaspace.size(), kMetaspace.size(), kMetaspace) != 0)
        return false;
  }
  return true;
}

void BpeModel::encode(std::string_view piece, std::vector<int64_t>& ids) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (auto id = find(piece)) {
      ids.push_back(*id);
      return;
    }
  }
  if (!split_before_metaspace_) return encode_word(piece, ids);
  static constexpr std::string_view kMetaspace = "\xE2\x96\x81";
  size_t start = 0;
  for (size_t at = piece.find(kMetaspace, 1); at != std::string_view::npos;
       at = piece.find(kMetaspace, at + 1)) {
    if (at >= start + kMetaspace.size() &&
        piece.compare(at - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0)
      continue;  // a run of ▁ stays together
    if (at > start) encode_word(piece.substr(start, at - start), ids);
    start = at;
  }
  encode_word(piece.substr(start), ids);
}

void BpeModel::encode_word(std::string_view piece, std::vector<int64_t>& ids) const {
  const bool cacheable = piece.size() < kLongestCachedWord;
  if (cacheable) {
    std::shared_lock lock(cache_mutex_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids.size();
  merge_word(piece, ids);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() < kCacheEntries)
      cache_.emplace(piece, std::vector<int64_t>(ids.begin() + first, ids.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int64_t>& ids) const {
  struct Symbol {
    int64_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  std::string unit;
  size_t pos = 0;
  bool previous_unk = false;
  while (pos < word.size()) {
    const size_t start = pos;
    next_code_point(word, pos);
    unit.clear();
    if (start > 0) unit += continuing_subword_prefix_;
    unit.append(word.substr(start, pos - start));
    if (pos == word.size()) unit += end_of_word_suffix_;
    if (auto id = find(unit)) {
      symbols.push_back({*id, 0, 0, true});
      previous_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (size_t b = start; b < pos; ++b) all &= byte_token_ids_[static_cast<unsigned char>(word[b])] >= 0;
      if (all) {
        for (size_t b = start; b < pos; ++b)
          symbols.push_back({byte_token_ids_[static_cast<unsigned char>(word[b])], 0, 0, true});
        previous_unk = false;
        continue;
      }
    }
    if (!unk_id_) continue;  // the Rust crate drops a character it has no token for
    if (!(fuse_unk_ && previous_unk)) symbols.push_back({*unk_id_, 0, 0, true});
    previous_unk = true;
  }
  const int n = static_cast<int>(symbols.size());
  for (int i = 0; i < n; ++i) symbols[i].prev = i - 1, symbols[i].next = i + 1 < n ? i + 1 : -1;

  struct Candidate {
    int32_t rank;
    int position;
    int64_t left_id, right_id, merged_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : position > o.position;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto consider = [&](int left) {
    if (left < 0 || symbols[left].next < 0) return;
    const int64_t a = symbols[left].id, b = symbols[symbols[left].next].id;
    const MergeTable::Merge merge = merges_.find(int32_t(a), int32_t(b));
    if (merge.rank >= 0) queue.push({merge.rank, left, a, b, merge.merged_id});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.position];
    // Stale when either side has changed since the pair was queued.
    if (!left.alive || left.next < 0 || left.id != top.left_id || symbols[left.next].id != top.right_id)
      continue;
    Symbol& right = symbols[left.next];
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.position;
    consider(left.prev);
    consider(top.position);
  }
  for (int i = 0; i >= 0 && i < n; i = symbols[i].next) ids.push_back(symbols[i].id);
}

}  // namespace dew::tokenize
