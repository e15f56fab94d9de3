// The parts every stage shares: counting and timing what it returns, and the source's walk over its
// records epoch by epoch in the order a global shuffle sets.
#include "data/stage.h"

#include <dew/error.h>

#include <chrono>

namespace dew::data::detail {

std::optional<Record> Stage::pull() {
  const auto start = std::chrono::steady_clock::now();
  std::optional<Record> record = next();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (record) {
    ++records_out_;
    for (int32_t segment : record->segment_ids) padding_out_ += segment == 0;
    tokens_out_ += int64_t(record->tokens.size());
  }
  return record;
}

StageStats Stage::stats() const {
  StageStats s;
  s.stage = describe().at("stage").get<std::string>();
  s.records_out = records_out_;
  s.tokens_out = tokens_out_;
  s.padding_tokens = padding_out_;
  s.dropped = dropped;
  s.seconds = seconds_;
  if (upstream_) {
    s.records_in = upstream_->records_out_;
    s.seconds -= upstream_->seconds_;
  }
  return s;
}

Json describe_stages(const Stage& head) {
  Json stages = Json::array();
  for (const Stage* s = &head; s; s = s->upstream()) {
    const Json part = s->described();
    stages.insert(stages.begin(), part.begin(), part.end());
  }
  return stages;
}

Cursor Stage::position() const {
  Cursor out;
  out.reserve(cursor_size());
  save(out);
  return out;
}

std::span<const int64_t> Stage::restore_upstream(std::span<const int64_t> cursor, size_t fields) {
  upstream_->restore(cursor.first(cursor.size() - fields));
  return cursor.last(fields);
}

std::string Stage::summary() const {
  return describe().dump();
}

std::optional<Record> Source::next() {
  for (;;) {
    if (index_ == size()) {
      if (size() == 0 || (options_.epochs != 0 && epoch_ + 1 >= options_.epochs)) return std::nullopt;
      DEW_REQUIRE(!whole_epoch_ || returned_in_epoch_ > 0,
                  "[data] {}: every record of epoch {} was skipped as malformed, so repeating it would yield "
                  "nothing forever; fix the files or turn skip_malformed off to see the first error",
                  describe().at("stage").get<std::string>(), epoch_);
      ++epoch_;
      index_ = 0;
      whole_epoch_ = true;
      returned_in_epoch_ = 0;
    }
    const int64_t step = index_++;
    const int64_t i = shuffle_seed_ ? permuted_index(step, size(), *shuffle_seed_, uint64_t(epoch_)) : step;
    std::optional<Record> record = read(i);
    if (record) {
      ++returned_in_epoch_;
      record->index = i;
      record->epoch = epoch_;
      return record;
    }
    ++dropped;
  }
}

void Source::restore(std::span<const int64_t> cursor) {
  const int64_t epoch = cursor[0], index = cursor[1];
  DEW_REQUIRE(
      epoch >= 0 && index >= 0 && index <= size() && (options_.epochs == 0 || epoch < options_.epochs),
      "[data] position: source epoch {} index {} is outside this source ({} records, {} epochs)", epoch,
      index, size(), options_.epochs);
  epoch_ = epoch;
  index_ = index;
  whole_epoch_ = index == 0;  // a resumed epoch's earlier records are not counted
  returned_in_epoch_ = 0;
}

Json Source::describe_options() const {
  return Json{{"epochs", options_.epochs}, {"skip_malformed", options_.skip_malformed}};
}

std::string Source::summary() const {
  Json d = describe();
  std::string line = d.at("stage").get<std::string>() + ": " + std::to_string(size()) + " records";
  if (d.contains("files")) line += " from " + std::to_string(d["files"].size()) + " file(s)";
  for (const char* key : {"unit", "field", "separator"})
    if (d.contains(key)) line += std::string(", ") + key + " " + d[key].dump();
  line += options_.epochs == 0 ? ", repeating forever" : ", " + std::to_string(options_.epochs) + " epoch(s)";
  if (shuffle_seed_) line += ", read in a shuffled order";
  if (options_.skip_malformed) line += ", malformed records skipped";
  return line;
}

}  // namespace dew::data::detail
