// pack: documents concatenated and cut into windows of T+1 tokens, each window beginning at the
// previous window's last token (llm.c's stride T: every token but the first is a target once). Each
// window numbers its documents 1, 2, ... (segment ids) and gives each token its position within its
// document; the last window of a finite chain is padded with id 0, segment 0.
#include <dew/error.h>

#include "data/stage.h"

namespace dew::data::detail {
namespace {

class Pack : public Stage {
 public:
  Pack(std::unique_ptr<Stage> upstream, int64_t T) : Stage(std::move(upstream)), T_(T) {}
  Json describe() const override { return {{"stage", "pack"}, {"T", T_}}; }
  std::string summary() const override {
    return fmt::format(
        "pack: windows of T+1 = {} tokens at stride {}, segment ids and positions per document", T_ + 1, T_);
  }
  // [upstream before the current document..., 1, offset, base]: the next window begins at token
  // `offset` of the document read next; or [upstream..., 0, 0, 0]: it begins with the next document.
  void save(Cursor& out) const override {
    if (doc_) {
      out.insert(out.end(), doc_start_.begin(), doc_start_.end());
      out.insert(out.end(), {1, int64_t(offset_), base_});
    } else {
      upstream_->save(out);
      out.insert(out.end(), {0, 0, 0});
    }
  }
  size_t cursor_size() const override { return upstream_->cursor_size() + 3; }
  void restore(std::span<const int64_t> cursor) override {
    const std::span<const int64_t> own = restore_upstream(cursor, 3);
    doc_.reset();
    if (own[0] == 0) return;
    DEW_REQUIRE(own[1] >= 0, "[data] position: pack offset {}; expected a count", own[1]);
    const size_t offset = size_t(own[1]);
    pull_document();
    DEW_REQUIRE(doc_ && offset < doc_->tokens.size(),
                "[data] position: pack offset {} is past the document it names ({} tokens)", offset,
                doc_ ? doc_->tokens.size() : 0);
    offset_ = offset;
    base_ = own[2];
  }

 protected:
  std::optional<Record> next() override {
    if (!doc_) pull_document();
    if (!doc_) return std::nullopt;
    Record w;
    w.origin = doc_->origin;
    const size_t length = size_t(T_) + 1;
    w.tokens.reserve(length);
    w.segment_ids.reserve(length);
    w.positions.reserve(length);
    w.loss_mask.reserve(length);
    int32_t segment = 1;
    for (;;) {
      const size_t take = std::min(length - w.tokens.size(), doc_->tokens.size() - offset_);
      const auto from = doc_->tokens.begin() + long(offset_);
      w.tokens.insert(w.tokens.end(), from, from + long(take));
      w.segment_ids.insert(w.segment_ids.end(), take, segment);
      for (size_t i = 0; i < take; ++i) w.positions.push_back(int32_t(base_ + int64_t(offset_ + i)));
      if (doc_->loss_mask.empty())
        w.loss_mask.insert(w.loss_mask.end(), take, 1);
      else
        w.loss_mask.insert(w.loss_mask.end(), doc_->loss_mask.begin() + long(offset_),
                           doc_->loss_mask.begin() + long(offset_ + take));
      offset_ += take;
      if (w.tokens.size() == length) break;
      const int64_t next_base = base_ + int64_t(doc_->tokens.size());
      pull_document();
      if (!doc_) break;
      if (doc_->continues)
        base_ = next_base;
      else
        ++segment;
    }
    if (w.tokens.size() < 2) return std::nullopt;  // only the previous window's last token: no target left
    if (w.tokens.size() < length) {
      w.tokens.resize(length, 0);
      w.segment_ids.resize(length, 0);
      w.positions.resize(length, 0);
      w.loss_mask.resize(length, 0);
      return w;
    }
    offset_ -= 1;  // the next window begins at this one's last token
    return w;
  }

 private:
  // Reads the next non-empty document; doc_ is empty at the end.
  void pull_document() {
    for (;;) {
      doc_start_.clear();
      upstream_->save(doc_start_);
      doc_ = upstream_->pull();
      offset_ = 0;
      base_ = 0;
      if (!doc_) return;
      DEW_REQUIRE(doc_->segment_ids.empty(), "[data] pack: {} is already packed; keep one pack stage",
                  doc_->origin);
      if (!doc_->tokens.empty()) return;
    }
  }
  int64_t T_;
  std::optional<Record> doc_;
  Cursor doc_start_;
  size_t offset_ = 0;
  int64_t base_ = 0;  // position of doc_->tokens[0] within its whole document
};

}  // namespace

std::unique_ptr<Stage> make_pack(std::unique_ptr<Stage> upstream, int64_t T) {
  DEW_REQUIRE(T >= 1 && T <= (int64_t(1) << 24), "[data] pack: T = {}; expected 1 to 2^24 tokens", T);
  return std::make_unique<Pack>(std::move(upstream), T);
}

}  // namespace dew::data::detail
