// The schedule of phases (schedule.h), over the public Chain of each phase.
#include "data/schedule.h"

#include <dew/error.h>

#include "io/json.h"

namespace dew::data::detail {
namespace {

// Global rows x T of a chain ending in pack(T) ... batch(B), from its description.
int64_t batch_tokens(const Chain& chain, size_t phase) {
  const nlohmann::json d = nlohmann::json::parse(chain.description());
  DEW_REQUIRE(d.contains("batch"),
              "[data] schedule: phase {} does not end in batch; each phase yields batches", phase);
  int64_t T = 0;
  for (const nlohmann::json& stage : d["stages"])
    if (stage["stage"] == "pack") T = stage["T"].get<int64_t>();
  DEW_REQUIRE(T > 0, "[data] schedule: phase {} has no pack stage, so its batches' tokens are unknown",
              phase);
  return d["batch"]["size"].get<int64_t>() * T;
}

}  // namespace

Schedule::Schedule(std::vector<Phase> phases) : phases_(std::move(phases)) {
  DEW_REQUIRE(!phases_.empty(), "[data] schedule: no phases; expected chains with token budgets");
  for (size_t i = 0; i < phases_.size(); ++i) {
    const int64_t tokens = batch_tokens(phases_[i].chain, i);
    if (i == 0) batch_tokens_ = tokens;
    DEW_REQUIRE(
        tokens == batch_tokens_,
        "[data] schedule: phase {}'s batches hold {} tokens and phase 0's {}; phases share one batch shape",
        i, tokens, batch_tokens_);
    const int64_t budget = phases_[i].tokens;
    DEW_REQUIRE(
        budget >= 0 && (budget > 0 || i + 1 == phases_.size()),
        "[data] schedule: phase {} has a budget of {} tokens; expected a positive count (only the last "
        "phase may have 0: until its chain ends)",
        i, budget);
    DEW_REQUIRE(
        budget % batch_tokens_ == 0,
        "[data] schedule: phase {}'s budget of {} tokens is not a whole number of {}-token batches, so the "
        "switch would fall inside a batch; make it a multiple of {}",
        i, budget, batch_tokens_, batch_tokens_);
  }
}

std::optional<Batch> Schedule::next_batch() {
  while (phases_[phase_].tokens != 0 && phase_tokens_ == phases_[phase_].tokens) {
    if (phase_ + 1 == phases_.size()) return std::nullopt;
    ++phase_;
    phase_tokens_ = 0;
  }
  std::optional<Batch> batch = phases_[phase_].chain.next_batch();
  if (!batch) {
    DEW_REQUIRE(
        phases_[phase_].tokens == 0,
        "[data] schedule: phase {} ended after {} of its {} tokens; give its sources more epochs (or 0, to "
        "repeat)",
        phase_, phase_tokens_, phases_[phase_].tokens);
    return std::nullopt;
  }
  phase_tokens_ += batch_tokens_;
  batch->index = batches_++;
  return batch;
}

nlohmann::json Schedule::position() const {
  nlohmann::json phases = nlohmann::json::array();
  for (const Phase& p : phases_) phases.push_back(nlohmann::json::parse(p.chain.position()));
  return {{"phase", phase_}, {"phase_tokens", phase_tokens_}, {"phases", phases}};
}

void Schedule::resume(const nlohmann::json& position) {
  try {
    const size_t phase = position.at("phase").get<size_t>();
    const int64_t tokens = position.at("phase_tokens").get<int64_t>();
    const nlohmann::json& phases = position.at("phases");
    DEW_REQUIRE(phase < phases_.size() && phases.size() == phases_.size() && tokens >= 0,
                "[data] position: schedule phase {} of {}; this schedule has {}", phase, phases.size(),
                phases_.size());
    for (size_t i = 0; i < phases_.size(); ++i) phases_[i].chain.resume(phases[i].dump());
    phase_ = phase;
    phase_tokens_ = tokens;
    batches_ = 0;
    for (size_t i = 0; i < phase; ++i) batches_ += phases_[i].tokens / batch_tokens_;
    batches_ += tokens / batch_tokens_;
  } catch (const nlohmann::json::exception& e) {
    fail("[data] position: malformed schedule ({}); expected what Chain::position() wrote", e.what());
  }
}

nlohmann::json Schedule::description() const {
  nlohmann::json phases = nlohmann::json::array();
  for (const Phase& p : phases_)
    phases.push_back({{"tokens", p.tokens}, {"chain", nlohmann::json::parse(p.chain.description())}});
  return {{"schedule", phases}};
}

std::string Schedule::show() const {
  std::string out = fmt::format("schedule: {} phases on the committed-token clock, {} tokens a batch\n",
                                phases_.size(), batch_tokens_);
  for (size_t i = 0; i < phases_.size(); ++i) {
    out += phases_[i].tokens ? fmt::format("phase {}: {} tokens\n", i, phases_[i].tokens)
                             : fmt::format("phase {}: until its chain ends\n", i);
    const std::string inner = phases_[i].chain.show();
    for (size_t start = 0, end; (end = inner.find('\n', start)) != std::string::npos; start = end + 1)
      out += "    " + inner.substr(start, end - start + 1);
  }
  return out;
}

std::vector<StageStats> Schedule::stats() const {
  std::vector<StageStats> out;
  for (size_t i = 0; i < phases_.size(); ++i)
    for (StageStats s : phases_[i].chain.stats()) {
      s.stage = "phase" + std::to_string(i) + "/" + s.stage;
      out.push_back(s);
    }
  return out;
}

}  // namespace dew::data::detail
