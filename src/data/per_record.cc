// The stages that see one record at a time and keep nothing between records: map, filter and the
// quality predicates (strip_tags.cc builds on the map). Their position is their upstream's (NOTE
// [positions]).
#include <dew/error.h>
#include <utf8proc.h>

#include "data/stage.h"

#include <unordered_set>

namespace dew::data::detail {
namespace {

class Map : public Stage {
 public:
  Map(std::unique_ptr<Stage> upstream, Json description, std::function<Record(Record)> f)
      : Stage(std::move(upstream)), description_(std::move(description)), f_(std::move(f)) {}
  Json describe() const override { return description_; }
  bool per_record() const override { return true; }
  bool cacheable() const override { return true; }

 protected:
  std::optional<Record> next() override {
    std::optional<Record> r = upstream_->pull();
    if (!r) return r;
    const int64_t index = r->index, epoch = r->epoch;  // the record stays its source's, whatever f builds
    Record out = f_(std::move(*r));
    out.index = index, out.epoch = epoch;
    return out;
  }

 private:
  Json description_;
  std::function<Record(Record)> f_;
};

class Filter : public Stage {
 public:
  Filter(std::unique_ptr<Stage> upstream, Json description, std::function<bool(const Record&)> keep)
      : Stage(std::move(upstream)), description_(std::move(description)), keep_(std::move(keep)) {}
  Json describe() const override { return description_; }
  bool per_record() const override { return true; }
  bool cacheable() const override { return true; }

 protected:
  std::optional<Record> next() override {
    for (;;) {
      std::optional<Record> r = upstream_->pull();
      if (!r || keep_(*r)) return r;
      ++dropped;
    }
  }

 private:
  Json description_;
  std::function<bool(const Record&)> keep_;
};

// Code points, letters among them (Unicode category L*), and lines repeating an earlier line.
struct TextCounts {
  int64_t code_points = 0, letters = 0, lines = 0, repeated_lines = 0;
};

TextCounts count_text(const std::string& text) {
  TextCounts c;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  for (utf8proc_ssize_t at = 0, n = utf8proc_ssize_t(text.size()); at < n;) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t step = utf8proc_iterate(p + at, n - at, &cp);
    if (step <= 0) {  // not UTF-8 here: a byte, not a letter
      ++at;
      ++c.code_points;
      continue;
    }
    at += step;
    ++c.code_points;
    const utf8proc_category_t category = utf8proc_category(cp);
    c.letters += category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO;
  }
  std::unordered_set<std::string_view> seen;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++c.lines;
    c.repeated_lines += !seen.insert(line).second;
  }
  return c;
}

}  // namespace

std::unique_ptr<Stage> make_map(std::unique_ptr<Stage> upstream, const std::string& name,
                                std::function<Record(Record)> f) {
  DEW_REQUIRE(!name.empty() && f, "[data] map: expected a name and a callable");
  return make_described_map(std::move(upstream), Json{{"stage", "map"}, {"name", name}}, std::move(f));
}

std::unique_ptr<Stage> make_described_map(std::unique_ptr<Stage> upstream, Json description,
                                          std::function<Record(Record)> f) {
  return std::make_unique<Map>(std::move(upstream), std::move(description), std::move(f));
}

std::unique_ptr<Stage> make_filter(std::unique_ptr<Stage> upstream, const std::string& name,
                                   std::function<bool(const Record&)> keep) {
  DEW_REQUIRE(!name.empty() && keep, "[data] filter: expected a name and a predicate");
  return make_described_filter(std::move(upstream), Json{{"stage", "filter"}, {"name", name}},
                               std::move(keep));
}

std::unique_ptr<Stage> make_described_filter(std::unique_ptr<Stage> upstream, Json description,
                                             std::function<bool(const Record&)> keep) {
  return std::make_unique<Filter>(std::move(upstream), std::move(description), std::move(keep));
}

std::unique_ptr<Stage> make_quality_filter(std::unique_ptr<Stage> upstream, const QualityOptions& o) {
  DEW_REQUIRE(
      o.min_chars >= 0 && o.max_chars >= 0 && (o.max_chars == 0 || o.max_chars >= o.min_chars),
      "[data] quality: min_chars {} and max_chars {}; expected 0 <= min_chars <= max_chars (0: no bound)",
      o.min_chars, o.max_chars);
  DEW_REQUIRE(o.min_letter_fraction >= 0 && o.min_letter_fraction <= 1 && o.max_repeated_line_fraction >= 0 &&
                  o.max_repeated_line_fraction <= 1,
              "[data] quality: min_letter_fraction {} and max_repeated_line_fraction {}; expected fractions "
              "in [0, 1]",
              o.min_letter_fraction, o.max_repeated_line_fraction);
  Json d = {{"stage", "quality"},
            {"min_chars", o.min_chars},
            {"max_chars", o.max_chars},
            {"min_letter_fraction", o.min_letter_fraction},
            {"max_repeated_line_fraction", o.max_repeated_line_fraction}};
  auto keep = [o](const Record& r) {
    const TextCounts c = count_text(r.text);
    if (c.code_points < o.min_chars || (o.max_chars > 0 && c.code_points > o.max_chars)) return false;
    if (double(c.letters) < o.min_letter_fraction * double(c.code_points)) return false;
    return double(c.repeated_lines) <= o.max_repeated_line_fraction * double(c.lines);
  };
  return make_described_filter(std::move(upstream), std::move(d), keep);
}

}  // namespace dew::data::detail
