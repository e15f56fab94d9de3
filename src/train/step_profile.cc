// train.h StepProfile: the op profile of training steps sorted into kinds, its JSON (PyTorch's side of
// `dew bench train` writes the same), and the table `dew train --profile` and the bench print.
#include <dew/error.h>
#include <dew/runtime.h>
#include <dew/train.h>
#include <fmt/core.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace dew::train {
namespace {

const std::vector<std::string>& kind_names() {
  static const std::vector<std::string> names = {"GEMM forward",
                                                 "GEMM input gradient",
                                                 "GEMM weight gradient",
                                                 "GEMM recompute",
                                                 "GEMM head",
                                                 "convolutions",
                                                 "attention",
                                                 "norms",
                                                 "element-wise",
                                                 "copies and layout",
                                                 "cross-entropy",
                                                 "embedding",
                                                 "casts",
                                                 "gradient norm and clipping",
                                                 "optimizer",
                                                 "remainder"};
  return names;
}

// The M, N and K of a matmul's profile label ("[4x ]1024x2304x768 f32 tb").
std::vector<int64_t> gemm_dims(const std::string& label) {
  size_t start = 0;
  while (start < label.size()) {
    size_t end = label.find(' ', start);
    if (end == std::string::npos) end = label.size();
    const std::string token = label.substr(start, end - start);
    std::vector<int64_t> dims;
    size_t p = 0;
    while (p < token.size() && std::isdigit(static_cast<unsigned char>(token[p]))) {
      size_t q = p;
      while (q < token.size() && std::isdigit(static_cast<unsigned char>(token[q]))) ++q;
      dims.push_back(std::stoll(token.substr(p, q - p)));
      if (q == token.size()) {
        p = q;
        break;
      }
      p = token[q] == 'x' ? q + 1 : token.size() + 1;
    }
    if (dims.size() == 3 && p == token.size()) return dims;
    start = end + 1;
  }
  return {};
}

// matmul's vjp names the phases of its backward products (ops/matmul/rules.cc); elsewhere: forward.
std::string gemm_role(const std::string& phase) {
  return phase == "input gradient" || phase == "weight gradient" || phase == "recompute" ? phase : "forward";
}

std::string kind_of(const OpTime& row, int64_t vocab) {
  if (row.phase == "optimizer") return "optimizer";
  if (row.phase == "clipping") return "gradient norm and clipping";
  const std::string& op = row.op;
  if (op == "grouped_matmul" || op == "grouped_matmul_weight_grad") return "GEMM " + gemm_role(row.phase);
  if (op == "matmul") {
    const std::vector<int64_t> dims = gemm_dims(row.label);
    if (std::find(dims.begin(), dims.end(), vocab) != dims.end()) return "GEMM head";
    return "GEMM " + gemm_role(row.phase);
  }
  if (op.starts_with("conv2d")) return "convolutions";
  if (op.starts_with("attention")) return "attention";
  if (op.starts_with("rms_norm") || op.starts_with("layer_norm") || op == "group_norm") return "norms";
  if (op.starts_with("cross_entropy")) return "cross-entropy";
  static const std::set<std::string> embedding = {"embedding", "embedding_backward", "index_select",
                                                  "gather",    "scatter_add",        "one_hot"};
  if (embedding.contains(op)) return "embedding";
  if (op == "cast") return "casts";
  static const std::set<std::string> layout = {"concat", "split", "pad",    "permute_copy",    "tril",
                                               "triu",   "fill",  "arange", "upsample_nearest"};
  if (layout.contains(op)) return "copies and layout";
  return "element-wise";
}

struct Usage {
  double wall, faults, system;
};

Usage usage_now() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return {wall, double(u.ru_minflt), double(u.ru_stime.tv_sec) + 1e-6 * double(u.ru_stime.tv_usec)};
}

}  // namespace

void StepProfiler::begin_step() {
  if (steps_ == 0) reset_op_profile();
  const Usage u = usage_now();
  wall_start_ = u.wall;
  faults_start_ = u.faults;
  system_start_ = u.system;
  set_op_profiling(true);
}

void StepProfiler::end_step() {
  set_op_profiling(false);
  const Usage u = usage_now();
  wall_ += u.wall - wall_start_;
  faults_ += u.faults - faults_start_;
  system_ += u.system - system_start_;
  ++steps_;
}

StepProfile StepProfiler::result(int64_t vocab) const {
  StepProfile p;
  p.steps = steps_;
  if (steps_ == 0) return p;
  const double n = double(steps_);
  p.step_seconds = (wall_ - op_profile_bookkeeping_seconds()) / n;
  p.minor_faults = faults_ / n;
  p.system_seconds = system_ / n;
  std::map<std::string, StepProfile::Row> kinds, gemms;
  double accounted = 0;
  for (const OpTime& row : op_profile()) {
    const std::string kind = kind_of(row, vocab);
    StepProfile::Row& k = kinds[kind];
    k.calls += row.calls;
    k.seconds += row.seconds / n;
    k.flops += row.flops / n;
    accounted += row.seconds / n;
    if (!kind.starts_with("GEMM") && kind != "convolutions") continue;
    const bool grouped = row.op != "matmul";  // experts' products and convolutions: named by their op
    const std::string name = (kind == "GEMM head" ? "head " : "") +
                             (kind == "convolutions" ? std::string("conv") : gemm_role(row.phase)) + "  " +
                             (grouped ? row.op + " " : "") + row.label;
    StepProfile::Row& g = gemms[name];
    g.name = name;
    g.calls += row.calls;
    g.seconds += row.seconds / n;
    g.flops += row.flops / n;
  }
  for (const std::string& name : kind_names()) {
    StepProfile::Row r = kinds[name];
    r.name = name;
    r.calls = int64_t(double(r.calls) / n + 0.5);
    if (name == "remainder") r.seconds = std::max(0.0, p.step_seconds - accounted);
    p.kinds.push_back(r);
  }
  for (auto& [name, g] : gemms) {
    g.calls = int64_t(double(g.calls) / n + 0.5);
    p.gemms.push_back(g);
  }
  std::sort(p.gemms.begin(), p.gemms.end(),
            [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  return p;
}

std::string step_profile_json(const StepProfile& p) {
  auto rows = [](const std::vector<StepProfile::Row>& rs) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rs)
      a.push_back({{"name", r.name}, {"calls", r.calls}, {"seconds", r.seconds}, {"flops", r.flops}});
    return a;
  };
  return nlohmann::json{{"steps", p.steps},
                        {"step_seconds", p.step_seconds},
                        {"minor_faults", p.minor_faults},
                        {"system_seconds", p.system_seconds},
                        {"kinds", rows(p.kinds)},
                        {"gemms", rows(p.gemms)}}
      .dump();
}

StepProfile step_profile_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  DEW_REQUIRE(j.is_object() && j.contains("kinds") && j["kinds"].is_array(),
              "[profile] expected a step profile's JSON object with \"kinds\"; got {:.200}", text);
  StepProfile p;
  try {
    p.steps = j.value("steps", int64_t(0));
    p.step_seconds = j.value("step_seconds", 0.0);
    p.minor_faults = j.value("minor_faults", 0.0);
    p.system_seconds = j.value("system_seconds", 0.0);
    for (const char* list : {"kinds", "gemms"})
      for (const auto& r : j.value(list, nlohmann::json::array()))
        (std::string(list) == "kinds" ? p.kinds : p.gemms)
            .push_back({r.at("name").get<std::string>(), r.value("calls", int64_t(0)),
                        r.value("seconds", 0.0), r.value("flops", 0.0)});
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("[profile] a step profile's JSON is malformed: {}", e.what()));
  }
  return p;
}

std::string format_step_profiles(const StepProfile& dew, const StepProfile* other,
                                 std::string_view other_name) {
  std::string out = fmt::format("where a step's time goes (ms per step, {} step{} of dew", dew.steps,
                                dew.steps == 1 ? "" : "s");
  out += other ? fmt::format(", {} of {})\n", other->steps, other_name) : ")\n";
  out += fmt::format("  {:<28} {:>10} {:>7}", "kind", "dew", "share");
  out += other ? fmt::format(" {:>10} {:>7}\n", other_name, "share") : "\n";
  auto seconds_of = [](const StepProfile& p, const std::string& name) {
    for (const auto& r : p.kinds)
      if (r.name == name) return r.seconds;
    return 0.0;
  };
  auto cell = [](double s, double step) {
    return fmt::format(" {:>10.1f} {:>6.1f}%", 1e3 * s, step > 0 ? 100 * s / step : 0.0);
  };
  for (const auto& r : dew.kinds) {
    out += fmt::format("  {:<28}", r.name) + cell(r.seconds, dew.step_seconds);
    out += other ? cell(seconds_of(*other, r.name), other->step_seconds) + "\n" : "\n";
  }
  out += fmt::format("  {:<28} {:>10.1f} {:>7}", "step", 1e3 * dew.step_seconds, "");
  out += other ? fmt::format(" {:>10.1f}\n", 1e3 * other->step_seconds) : "\n";
  out += fmt::format("  {:<28} {:>10.0f} {:>7}", "minor page faults", dew.minor_faults, "");
  out += other ? fmt::format(" {:>10.0f}\n", other->minor_faults) : "\n";
  out += fmt::format("  {:<28} {:>10.1f} {:>7}", "system time (page clearing)", 1e3 * dew.system_seconds, "");
  out += other ? fmt::format(" {:>10.1f}\n", 1e3 * other->system_seconds) : "\n";
  auto gemm_table = [](const StepProfile& p, std::string_view name) {
    std::string t = fmt::format("GEMMs and convolutions of {} (per step)\n  {:<48} {:>5} {:>9} {:>8}\n", name,
                                "role  shape  case", "calls", "ms", "GFLOP/s");
    for (const auto& g : p.gemms)
      t += fmt::format("  {:<48} {:>5} {:>9.2f} {:>8.1f}\n", g.name, g.calls, 1e3 * g.seconds,
                       g.seconds > 0 ? g.flops / g.seconds / 1e9 : 0.0);
    return t;
  };
  out += gemm_table(dew, "dew");
  if (other) out += gemm_table(*other, other_name);
  return out;
}

}  // namespace dew::train
