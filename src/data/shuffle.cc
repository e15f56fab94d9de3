// shuffle: a global permutation of the source's records per epoch where every stage in between sees
// one record at a time (the permutation is then applied where the records are read, in O(1) memory),
// otherwise a window of records shuffled as a block. Both are functions of (seed, epoch or window)
// only, so a resumed chain shuffles the same way.
#include <dew/error.h>
#include <dew/runtime.h>

#include "data/stage.h"

#include <bit>
#include <numeric>

namespace dew::data::detail {

int64_t permuted_index(int64_t i, int64_t n, uint64_t seed, uint64_t round_key) {
  if (n <= 1) return i;
  // A balanced Feistel network over 2^(2h) >= n values is a bijection; walking the cycle until a
  // value falls below n restricts it to a bijection of [0, n) (fewer than 4 steps expected).
  const int half = (std::bit_width(uint64_t(n - 1)) + 1) / 2;
  const uint64_t mask = (uint64_t(1) << half) - 1;
  uint64_t x = uint64_t(i);
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint32_t round = 0; round < 6; ++round) {
      const auto out = philox4x32_10({uint32_t(right), uint32_t(right >> 32), round, uint32_t(round_key)},
                                     {uint32_t(seed), uint32_t(seed >> 32)});
      const uint64_t f = (uint64_t(out[0]) | uint64_t(out[1]) << 32) & mask;
      const uint64_t mixed = left ^ f;
      left = right;
      right = mixed;
    }
    x = left << half | right;
  } while (x >= uint64_t(n));
  return int64_t(x);
}

namespace {

class GlobalShuffle : public Stage {  // the source does the work; this stage names it in the chain
 public:
  GlobalShuffle(std::unique_ptr<Stage> upstream, uint64_t seed) : Stage(std::move(upstream)), seed_(seed) {}
  Json describe() const override { return {{"stage", "shuffle"}, {"seed", seed_}, {"order", "global"}}; }
  std::string summary() const override {
    return "shuffle: a global permutation per epoch, seed " + std::to_string(seed_) +
           " (applied at the source)";
  }
  bool per_record() const override { return true; }
  bool cacheable() const override { return true; }  // the source applies the order

 protected:
  std::optional<Record> next() override { return upstream_->pull(); }

 private:
  uint64_t seed_;
};

class WindowShuffle : public Stage {
 public:
  WindowShuffle(std::unique_ptr<Stage> upstream, uint64_t seed, int64_t window)
      : Stage(std::move(upstream)), seed_(seed), window_(window) {}
  Json describe() const override { return {{"stage", "shuffle"}, {"seed", seed_}, {"window", window_}}; }
  std::string summary() const override {
    return "shuffle: blocks of " + std::to_string(window_) + " records, seed " + std::to_string(seed_);
  }
  // [upstream before the window..., window, emitted], or [upstream..., next window, 0] between windows.
  void save(Cursor& out) const override {
    if (emitted_ < buffer_.size()) {
      out.insert(out.end(), window_start_.begin(), window_start_.end());
      out.insert(out.end(), {int64_t(next_window_) - 1, int64_t(emitted_)});
    } else {
      upstream_->save(out);
      out.insert(out.end(), {int64_t(next_window_), 0});
    }
  }
  size_t cursor_size() const override { return upstream_->cursor_size() + 2; }
  void restore(std::span<const int64_t> cursor) override {
    const std::span<const int64_t> own = restore_upstream(cursor, 2);
    DEW_REQUIRE(own[0] >= 0 && own[1] >= 0,
                "[data] position: shuffle window {} and offset {}; expected counts", own[0], own[1]);
    next_window_ = uint64_t(own[0]);
    const size_t emitted = size_t(own[1]);
    buffer_.clear();
    emitted_ = 0;
    if (emitted == 0) return;
    fill();
    DEW_REQUIRE(emitted < buffer_.size(),
                "[data] position: shuffle window {} has {} records, not more than {}", next_window_ - 1,
                buffer_.size(), emitted);
    emitted_ = emitted;
  }

 protected:
  std::optional<Record> next() override {
    if (emitted_ == buffer_.size()) fill();
    if (buffer_.empty()) return std::nullopt;
    return std::move(buffer_[order_[emitted_++]]);
  }

 private:
  void fill() {
    window_start_ = upstream_->position();
    buffer_.clear();
    emitted_ = 0;
    while (int64_t(buffer_.size()) < window_) {
      std::optional<Record> r = upstream_->pull();
      if (!r) break;
      buffer_.push_back(std::move(*r));
    }
    // Fisher-Yates with draws keyed by (seed, window, j).
    const uint64_t k = next_window_++;
    order_.resize(buffer_.size());
    std::iota(order_.begin(), order_.end(), size_t(0));
    for (size_t j = order_.size(); j-- > 1;) {
      const auto out = philox4x32_10({uint32_t(j), uint32_t(j >> 32), uint32_t(k), uint32_t(k >> 32)},
                                     {uint32_t(seed_), uint32_t(seed_ >> 32)});
      std::swap(order_[j], order_[size_t((uint64_t(out[0]) * (j + 1)) >> 32)]);
    }
  }
  uint64_t seed_;
  int64_t window_;
  uint64_t next_window_ = 0;
  Cursor window_start_;
  std::vector<Record> buffer_;
  std::vector<size_t> order_;
  size_t emitted_ = 0;
};

}  // namespace

std::unique_ptr<Stage> make_shuffle(std::unique_ptr<Stage> upstream, uint64_t seed, int64_t window) {
  DEW_REQUIRE(window >= 0,
              "[data] shuffle: window {}; expected 0 (a global permutation) or a number of records", window);
  Stage* stage = upstream.get();
  while (stage->upstream()) stage = stage->upstream();
  auto* source = dynamic_cast<Source*>(stage);  // or a mixture
  DEW_REQUIRE(source || window > 0,
              "[data] shuffle: window 0 asks for a global permutation of a source's records, and this chain "
              "begins with a mixture; shuffle each member, or give a window (a number of records)");
  DEW_REQUIRE(!source || source->records_are_documents(),
              "[data] shuffle: the token files are read without a document separator, so their records are "
              "pieces of one document; give the source a separator (the EOS id) to shuffle documents");
  if (window > 0) return std::make_unique<WindowShuffle>(std::move(upstream), seed, window);
  for (Stage* s = upstream.get(); s != source; s = s->upstream())
    DEW_REQUIRE(
        s->per_record(),
        "[data] shuffle: window 0 asks for a global permutation, which needs every stage before it to "
        "see one record at a time, and {} does not; give a window (a number of records)",
        s->describe().at("stage").get<std::string>());
  DEW_REQUIRE(!source->shuffled(),
              "[data] shuffle: the source is already shuffled globally; keep one shuffle");
  source->shuffle_globally(seed);
  return std::make_unique<GlobalShuffle>(std::move(upstream), seed);
}

}  // namespace dew::data::detail
