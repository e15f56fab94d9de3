// Route log, DEW_IMPL overrides and the no-route error of the selector.
#include <dew/error.h>
#include <dew/ops.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "select/registry.h"

namespace dew::select {
namespace {

struct RouteLog {
  std::mutex mutex;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t, std::less<>> counts;
  bool print = [] {
    const char* env = std::getenv("DEW_ROUTES");
    return env && std::string_view(env) == "1";
  }();
};

RouteLog& route_log() {
  static RouteLog* log = new RouteLog;
  return *log;
}

struct Overrides {
  std::mutex mutex;
  std::map<std::string, std::string, std::less<>> pins;
  std::vector<std::pair<std::string, std::string>> exclusions;
  // Whether there are any: every op call asks twice, and without overrides (the rule) it need not lock.
  std::atomic<bool> any = false;
};

Overrides& parse_into(Overrides& o, std::string_view spec) {
  o.pins.clear();
  o.exclusions.clear();
  size_t start = 0;
  while (start <= spec.size() && !spec.empty()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view entry = spec.substr(start, end - start);
    size_t colon = entry.find(':');
    DEW_REQUIRE(colon != std::string_view::npos && colon > 0 && colon + 1 < entry.size(),
                "DEW_IMPL entry '{}' is malformed; expected op:impl to pin or op:-impl to exclude", entry);
    std::string op(entry.substr(0, colon));
    std::string_view impl = entry.substr(colon + 1);
    if (impl[0] == '-') {
      DEW_REQUIRE(impl.size() > 1, "DEW_IMPL entry '{}' excludes nothing; expected op:-impl", entry);
      o.exclusions.emplace_back(op, std::string(impl.substr(1)));
    } else {
      o.pins[op] = std::string(impl);
    }
    start = end + 1;
  }
  return o;
}

Overrides& overrides() {
  static Overrides* o = [] {
    auto* fresh = new Overrides;
    if (const char* env = std::getenv("DEW_IMPL")) parse_into(*fresh, env);
    fresh->any = !fresh->pins.empty() || !fresh->exclusions.empty();
    return fresh;
  }();
  return *o;
}

}  // namespace

void record_route(std::string_view op, std::string_view implementation, std::string_view case_label) {
  RouteLog& log = route_log();
  std::lock_guard lock(log.mutex);
  // Found by views of the names: a route already taken (nearly every call) makes no strings.
  auto it = log.counts.find(std::make_tuple(op, implementation, case_label));
  if (it == log.counts.end())
    it = log.counts
             .emplace(std::make_tuple(std::string(op), std::string(implementation), std::string(case_label)),
                      0)
             .first;
  if (it->second++ == 0 && log.print)
    fmt::print(stderr, "route {} -> {} [{}]\n", op, implementation, case_label);
}

std::vector<Route> routes() {
  RouteLog& log = route_log();
  std::lock_guard lock(log.mutex);
  std::vector<Route> out;
  for (const auto& [key, n] : log.counts)
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
  return out;
}

void reset_routes() {
  RouteLog& log = route_log();
  std::lock_guard lock(log.mutex);
  log.counts.clear();
}

void set_impl_overrides(std::string_view spec) {
  Overrides& o = overrides();
  std::lock_guard lock(o.mutex);
  Overrides parsed;
  parse_into(parsed, spec);  // parse first: a malformed spec leaves the old overrides in place
  o.pins = std::move(parsed.pins);
  o.exclusions = std::move(parsed.exclusions);
  o.any = !o.pins.empty() || !o.exclusions.empty();
}

std::optional<std::string> pinned_implementation(std::string_view op) {
  Overrides& o = overrides();
  if (!o.any) return std::nullopt;
  std::lock_guard lock(o.mutex);
  auto it = o.pins.find(op);
  if (it == o.pins.end()) return std::nullopt;
  return it->second;
}

bool excluded(std::string_view op, std::string_view impl) {
  Overrides& o = overrides();
  if (!o.any) return false;
  std::lock_guard lock(o.mutex);
  return std::any_of(o.exclusions.begin(), o.exclusions.end(),
                     [&](const auto& e) { return e.first == op && e.second == impl; });
}

void throw_no_implementation(std::string_view op, std::string_view case_label,
                             const std::optional<std::string>& pinned, const std::vector<Verdict>& verdicts,
                             const std::vector<std::string>& all_names) {
  if (pinned && std::find(all_names.begin(), all_names.end(), *pinned) == all_names.end())
    fail("[{}] DEW_IMPL pins implementation '{}', which does not exist; expected one of: {}", op, *pinned,
         fmt::join(all_names, ", "));
  std::string lines;
  for (const auto& v : verdicts)
    lines += fmt::format("\n  {}: needs {} ({})", v.implementation, v.requirement, v.reason);
  fail("[{}] no implementation accepts this call ({}){}{}", op, case_label,
       pinned ? fmt::format(" with DEW_IMPL pinning '{}'", *pinned) : std::string(), lines);
}

}  // namespace dew::select

// The public route API of include/dew/ops.h.
namespace dew {

std::vector<RouteRecord> routes() {
  std::vector<RouteRecord> out;
  for (const auto& r : select::routes()) out.push_back({r.op, r.implementation, r.case_label, r.count});
  return out;
}

void reset_routes() {
  select::reset_routes();
}

void set_impl_overrides(const std::string& spec) {
  select::set_impl_overrides(spec);
}

}  // namespace dew
