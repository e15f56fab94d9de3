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

std::string Stage::summary() const {
  return describe().dump();
}

std::optional<Record> Source::next() {
  for (;;) {
    if (index_ == size()) {
      if (options_.epochs != 0 && epoch_ + 1 >= options_.epochs) return std::nullopt;
      ++epoch_;
      index_ = 0;
      if (size() == 0) return std::nullopt;
    }
    const int64_t step = index_++;
    const int64_t i = shuffle_seed_ ? permuted_index(step, size(), *shuffle_seed_, uint64_t(epoch_)) : step;
    std::optional<Record> record = read(i);
    if (record) return record;
    ++dropped;
  }
}

void Source::restore(const Json& position) {
  const int64_t epoch = position.at("epoch").get<int64_t>(), index = position.at("index").get<int64_t>();
  DEW_REQUIRE(
      epoch >= 0 && index >= 0 && index <= size() && (options_.epochs == 0 || epoch < options_.epochs),
      "[data] position: source epoch {} index {} is outside this source ({} records, {} epochs)", epoch,
      index, size(), options_.epochs);
  epoch_ = epoch;
  index_ = index;
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
