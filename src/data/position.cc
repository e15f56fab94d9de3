// Saving a chain's position and resuming from one. The position carries the chain's description
// (sources with content hashes, stages, seeds, the tokenizer's content hash, the global batch), and
// a chain whose description differs refuses it, naming each difference. A process's shard is not
// part of it: the position is the global batch's, so it resumes under any process count that
// divides the global batch.
#include <dew/error.h>

#include "data/chain_state.h"
#include "io/json.h"

namespace dew::data {

using detail::Json;

namespace {

constexpr const char* kFormat = "dew.data.position";
constexpr size_t kMaxDifferences = 8;

// The differences between an old and a new description, as "where: old → new" lines.
void differences(const Json& was, const Json& now, const std::string& where, std::vector<std::string>& out) {
  if (out.size() >= kMaxDifferences || was == now) return;
  if (was.is_object() && now.is_object()) {
    for (const auto& [key, value] : was.items()) {
      const std::string at = where.empty() ? key : where + "." + key;
      if (!now.contains(key))
        out.push_back(at + ": " + value.dump() + ", now absent");
      else
        differences(value, now[key], at, out);
    }
    for (const auto& [key, value] : now.items())
      if (!was.contains(key))
        out.push_back((where.empty() ? key : where + "." + key) + ": absent, now " + value.dump());
    return;
  }
  if (was.is_array() && now.is_array()) {
    for (size_t i = 0; i < std::min(was.size(), now.size()); ++i) {
      std::string at = where + "[" + std::to_string(i) + "]";
      if (where == "stages" && was[i].is_object() && was[i].contains("stage"))
        at = "stage " + std::to_string(i) + " (" + was[i]["stage"].get<std::string>() + ")";
      differences(was[i], now[i], at, out);
    }
    if (was.size() != now.size())
      out.push_back(fmt::format("{}: {} entries, now {}", where, was.size(), now.size()));
    return;
  }
  out.push_back(where + ": " + was.dump() + ", now " + now.dump());
}

}  // namespace

Json Chain::State::description() const {
  if (schedule) return schedule->description();
  Json d = {{"stages", detail::describe_stages(*head)}};
  if (batch_size) d["batch"] = {{"size", *batch_size}};
  return d;
}

std::string Chain::description() const {
  std::lock_guard lock(state_->stages);
  return state_->description().dump();
}

std::string Chain::position() const {
  State& s = *state_;
  std::lock_guard lock(s.stages);
  Json position = {{"format", kFormat}, {"version", 1}, {"description", s.description()}};
  if (s.schedule) {
    position["batches"] = s.schedule->batches();
    position["schedule"] = s.schedule->position();
  } else {
    position["batches"] = s.batches;
    position["state"] = s.prefetcher ? s.last_position : s.head->position();
  }
  return position.dump();
}

void Chain::resume(const std::string& position) {
  State& s = *state_;
  const nlohmann::json saved = parse_json(position, "data position");
  DEW_REQUIRE(saved.is_object() && saved.contains("format") && saved["format"] == kFormat &&
                  saved.contains("version") && saved["version"] == 1 && saved.contains("description") &&
                  (saved.contains("state") || saved.contains("schedule")),
              "[data] position: not a version-1 {} record; expected what Chain::position() wrote", kFormat);
  s.prefetcher.reset();  // what it built ahead belongs to the old position
  s.prepare();
  std::lock_guard lock(s.stages);
  std::vector<std::string> changed;
  differences(saved.at("description"), s.description(), "", changed);
  DEW_REQUIRE(
      changed.empty(),
      "[data] position: the chain has changed since this position was saved, so its records would not "
      "continue where they left off:\n  {}\nResume with the chain as it was, or start the data afresh",
      fmt::join(changed, "\n  "));
  if (s.schedule) {
    DEW_REQUIRE(saved.contains("schedule"),
                "[data] position: not a schedule's; expected what this chain wrote");
    s.schedule->resume(saved["schedule"]);
    return;
  }
  detail::Cursor state;
  try {
    state = saved.at("state").get<detail::Cursor>();
    s.batches = saved.at("batches").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    fail("[data] position: malformed ({}); expected what Chain::position() wrote", e.what());
  }
  DEW_REQUIRE(
      state.size() == s.head->cursor_size() && s.batches >= 0,
      "[data] position: {} integers of state for a chain that keeps {}; expected what Chain::position() "
      "wrote for this chain",
      state.size(), s.head->cursor_size());
  s.head->restore(state);
  s.last_position = state;
}

}  // namespace dew::data
