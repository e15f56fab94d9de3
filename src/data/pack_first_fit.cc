// pack_first_fit: whole documents placed into windows of T+1 tokens, never split across windows
// (one longer than a window is cut into window-sized pieces, each a window alone). Documents are
// taken in blocks of `block`; each block is packed first-fit-decreasing (longest first, each into the
// first window with room) and its windows returned in the order they were opened, padded with id 0,
// segment 0. Positions restart at 0 in each document. The position is the upstream's from before the
// block and how many of its windows were returned; restore packs the block again.
#include <dew/error.h>

#include "data/stage.h"

#include <algorithm>
#include <numeric>

namespace dew::data::detail {
namespace {

class PackFirstFit : public Stage {
 public:
  PackFirstFit(std::unique_ptr<Stage> upstream, int64_t T, int64_t block)
      : Stage(std::move(upstream)), T_(T), block_(block) {}
  Json describe() const override {
    return {{"stage", "pack"}, {"T", T_}, {"mode", "first_fit"}, {"block", block_}};
  }
  std::string summary() const override {
    return fmt::format(
        "pack: whole documents into windows of T+1 = {} tokens, first-fit-decreasing over blocks "
        "of {} documents, padded",
        T_ + 1, block_);
  }
  // [upstream before the block..., windows returned], or [upstream..., 0] between blocks.
  void save(Cursor& out) const override {
    if (emitted_ < windows_.size()) {
      out.insert(out.end(), block_start_.begin(), block_start_.end());
      out.push_back(int64_t(emitted_));
    } else {
      upstream_->save(out);
      out.push_back(0);
    }
  }
  size_t cursor_size() const override { return upstream_->cursor_size() + 1; }
  void restore(std::span<const int64_t> cursor) override {
    const std::span<const int64_t> own = restore_upstream(cursor, 1);
    windows_.clear();
    emitted_ = 0;
    if (own[0] == 0) return;
    fill();
    DEW_REQUIRE(own[0] > 0 && size_t(own[0]) < windows_.size(),
                "[data] position: first-fit block has {} windows, not more than {}", windows_.size(), own[0]);
    emitted_ = size_t(own[0]);
  }

 protected:
  std::optional<Record> next() override {
    if (emitted_ == windows_.size()) fill();
    if (emitted_ == windows_.size()) return std::nullopt;
    return std::move(windows_[emitted_++]);
  }

 private:
  void fill() {
    block_start_.clear();
    upstream_->save(block_start_);
    windows_.clear();
    emitted_ = 0;
    const size_t length = size_t(T_) + 1;
    // The block's documents, cut to at most a window each.
    std::vector<Record> pieces;
    for (int64_t d = 0; d < block_; ++d) {
      std::optional<Record> doc = upstream_->pull();
      if (!doc) break;
      DEW_REQUIRE(
          !doc->continues && doc->segment_ids.empty(),
          "[data] pack: {} is {}; first-fit packing places whole documents", doc->origin,
          doc->continues ? "a piece of a document (a token file without separator)" : "already packed");
      for (size_t at = 0; at < doc->tokens.size(); at += length) {
        Record piece;
        piece.origin = doc->origin;
        piece.tokens.assign(doc->tokens.begin() + long(at),
                            doc->tokens.begin() + long(std::min(doc->tokens.size(), at + length)));
        piece.positions.resize(piece.tokens.size());
        std::iota(piece.positions.begin(), piece.positions.end(), int32_t(at));
        if (doc->loss_mask.empty())
          piece.loss_mask.assign(piece.tokens.size(), 1);
        else
          piece.loss_mask.assign(doc->loss_mask.begin() + long(at),
                                 doc->loss_mask.begin() + long(at + piece.tokens.size()));
        pieces.push_back(std::move(piece));
      }
    }
    // First-fit-decreasing: longest first (ties in arrival order), each into the first window with room.
    std::vector<size_t> order(pieces.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return pieces[a].tokens.size() > pieces[b].tokens.size(); });
    for (size_t i : order) {
      const Record& piece = pieces[i];
      size_t w = 0;
      while (w < windows_.size() && windows_[w].tokens.size() + piece.tokens.size() > length) ++w;
      if (w == windows_.size()) {
        windows_.emplace_back();
        windows_.back().origin = piece.origin;
      }
      Record& window = windows_[w];
      const int32_t segment = window.segment_ids.empty() ? 1 : window.segment_ids.back() + 1;
      window.tokens.insert(window.tokens.end(), piece.tokens.begin(), piece.tokens.end());
      window.positions.insert(window.positions.end(), piece.positions.begin(), piece.positions.end());
      window.segment_ids.insert(window.segment_ids.end(), piece.tokens.size(), segment);
      window.loss_mask.insert(window.loss_mask.end(), piece.loss_mask.begin(), piece.loss_mask.end());
    }
    for (Record& window : windows_) {
      window.tokens.resize(length, 0);
      window.segment_ids.resize(length, 0);
      window.positions.resize(length, 0);
      window.loss_mask.resize(length, 0);
    }
  }
  int64_t T_, block_;
  Cursor block_start_;
  std::vector<Record> windows_;
  size_t emitted_ = 0;
};

}  // namespace

std::unique_ptr<Stage> make_pack_first_fit(std::unique_ptr<Stage> upstream, int64_t T, int64_t block) {
  DEW_REQUIRE(T >= 1 && T <= (int64_t(1) << 24), "[data] pack: T = {}; expected 1 to 2^24 tokens", T);
  DEW_REQUIRE(block >= 1 && block <= (int64_t(1) << 20),
              "[data] pack: block of {} documents; expected 1 to 2^20", block);
  return std::make_unique<PackFirstFit>(std::move(upstream), T, block);
}

}  // namespace dew::data::detail
