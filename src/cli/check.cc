// `dew check`: the float64 gate from the command line, one table row per (op, implementation, dtype,
// case), and one per (op, case) for its derivatives; closing with "N passed, N failed"; non-zero exit
// on any failure.
#include <dew/runtime.h>

#include <algorithm>
#include <set>

#include "cli/commands.h"
#include "gate/catalog.h"

namespace dew::cli {
namespace {

struct CheckOptions {
  std::string op, implementation, dtype, tag = "ci";
  std::optional<uint64_t> seed;
  bool forward_only = false;  // only the implementations' output rows, no rule or derivative rows
};

// One gate row: the worst RMS and worst-row ratios over the outputs, and the verdict.
void print_row(const gate::Report& r, int& passed, int& failed) {
  double rms = 0, worst = 0;
  for (const auto& out : r.outputs) {
    rms = std::max(rms, out.rms_ratio());
    worst = std::max(worst, out.worst_row_ratio());
  }
  (r.passed() ? passed : failed)++;
  fmt::print("{:<14} {:<18} {:<5} {:<28} {:>9.3f} {:>9.3f}  {}\n", r.op, r.implementation,
             dtype_name(r.dtype), r.case_name, rms, worst, r.verdict());
}

// --impl NAME selects that implementation, or every one of a backend ("cuda" selects "cuda.*").
bool selected(const std::string& wanted, const std::string& impl) {
  return wanted.empty() || impl == wanted || impl.starts_with(wanted + ".");
}

int run_check(const CheckOptions& o) {
  if (!o.op.empty() && !gate::find_op(o.op)) {
    std::vector<std::string> names;
    for (const auto& e : gate::catalog()) names.push_back(e.name);
    fail("--op {} is not an operation; expected one of: {}", o.op, fmt::join(names, ", "));
  }
  // A name that selects nothing is a typo, not a pass: say what would have matched.
  std::set<std::string> impls, tags;
  for (const auto& e : gate::catalog()) {
    if (!o.op.empty() && e.name != o.op) continue;
    for (const auto& impl : e.implementations) impls.insert(impl.name);
    for (const auto& c : e.cases) tags.insert(c.tags.begin(), c.tags.end());
  }
  DEW_REQUIRE(std::any_of(impls.begin(), impls.end(),
                          [&](const std::string& i) { return selected(o.implementation, i); }),
              "--impl {} names no implementation{}; expected one of: {}", o.implementation,
              o.op.empty() ? "" : " of " + o.op, fmt::join(impls, ", "));
  DEW_REQUIRE(tags.count(o.tag), "--tag {} names no case{}; expected one of: {}", o.tag,
              o.op.empty() ? "" : " of " + o.op, fmt::join(tags, ", "));
  std::optional<DType> only_dtype;
  if (!o.dtype.empty()) only_dtype = parse_dtype(o.dtype);
  uint64_t seed = o.seed ? *o.seed : gate::gate_seed();
  int passed = 0, failed = 0, skipped = 0;
  fmt::print("{:<14} {:<18} {:<5} {:<28} {:>9} {:>9}  {}\n", "op", "impl", "dtype", "case", "rms", "worst",
             "verdict");
  for (const auto& e : gate::catalog()) {
    if (!o.op.empty() && e.name != o.op) continue;
    for (const auto& impl : e.implementations) {
      if (!selected(o.implementation, impl.name)) continue;
      for (const auto& c : e.cases) {
        if (!c.has_tag(o.tag)) continue;
        for (DType t : c.dtypes) {
          if (only_dtype && t != *only_dtype) continue;
          gate::Report r = e.check(impl.name, c.name, t, seed);
          if (!r.ran) {
            ++skipped;
            continue;
          }
          print_row(r, passed, failed);
        }
      }
    }
    if (o.forward_only) continue;
    // The rule rows: the vjp and jvp at each dtype below f64 with the forward on each implementation,
    // against float64 (rule_gate.h); the case column names what ran ("vjp+jvp" or "vjp").
    for (const auto& impl : e.implementations) {
      if (!selected(o.implementation, impl.name)) continue;
      for (const auto& c : e.cases) {
        if (!c.has_tag(o.tag)) continue;
        for (DType t : c.dtypes) {
          if (t == DType::f64 || (only_dtype && t != *only_dtype)) continue;
          const gate::Report r = e.rules(impl.name, c.name, t, seed);
          if (!r.ran) continue;
          print_row(r, passed, failed);
        }
      }
    }
    // The derivative rows (vjp and jvp in float64 against central differences and each other): one per
    // case, under the implementation column "vjp+jvp" (or "vjp" where forward mode is not written yet).
    if (!o.implementation.empty() || (only_dtype && *only_dtype != DType::f64)) continue;
    for (const auto& c : e.cases) {
      if (!c.has_tag(o.tag)) continue;
      const gate::DerivativeReport d = e.derivatives(c.name, seed);
      if (!d.ran) continue;
      (d.failures.empty() ? passed : failed)++;
      fmt::print("{:<14} {:<18} {:<5} {:<28} {:>9} {:>9}  {}\n", e.name, d.jvp_ran ? "vjp+jvp" : "vjp", "f64",
                 c.name, "-", "-", d.failures.empty() ? "pass" : "FAIL: " + d.failures[0]);
    }
  }
  fmt::print("{} passed, {} failed ({} skipped: an implementation refused the case; seed {})\n", passed,
             failed, skipped, seed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_check(CLI::App& app, int& status) {
  auto* check_cmd =
      app.add_subcommand("check", "run the float64 gate over every op, implementation, dtype and case");
  CheckOptions& check = runs(check_cmd, status, run_check);
  check_cmd->add_option("--op", check.op, "only this op");
  check_cmd->add_option("--impl", check.implementation,
                        "only this implementation, or a backend's (cuda: every cuda.* implementation)");
  check_cmd->add_option("--dtype", check.dtype, "only this dtype (f64, f32, bf16, f16)");
  check_cmd->add_option("--tag", check.tag, "cases with this tag")->default_val("ci");
  check_cmd->add_option("--seed", check.seed, "replay a seed printed by a failure");
  check_cmd->add_flag("--forward-only", check.forward_only,
                      "only the implementations' outputs (no rule rows, no float64 derivative rows)");
}

}  // namespace dew::cli
