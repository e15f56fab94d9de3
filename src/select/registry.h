// The implementation registry of one operation and the selector over it. An implementation declares
// as data the cases it supports (requirements); the selector returns the first eligible one in order
// of preference, or an error listing every candidate and the requirement it missed.
// Refusals are values; only select() throws, and only when nothing is eligible.
#pragma once

#include <dew/tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "select/overrides.h"
#include "select/route_log.h"

namespace dew::select {

// The check runs on every call; the reason is written only when a refusal is reported (select's
// error, explain, the gate): formatting it for each implementation passed over cost a decode step's
// products a few microseconds each.
template <class Args>
struct Requirement {
  std::string text;                                // "dtype in {f32, bf16}"
  std::function<bool(const Args&)> met;            // does the call meet it?
  std::function<std::string(const Args&)> reason;  // why not, when it does not
  std::vector<DType> dtypes;  // dtype_in's list, on any machine (for the test suite); empty otherwise
};

template <class Args>
struct Implementation {
  std::string name;  // backend.algorithm: "portable", "cpu.blas", "cpu.avx2"
  std::vector<Requirement<Args>> requirements;
  std::function<void(const Args&, std::vector<Tensor>& outputs)> run;
};

struct Verdict {
  std::string implementation;
  bool eligible = true;
  std::string requirement;  // the first unmet requirement, when not eligible
  std::string reason;
};

template <class Args>
class Registry {
 public:
  // Implementations are added best first; "portable" comes last and accepts every case it can.
  void add(Implementation<Args> impl) { impls_.push_back(std::move(impl)); }
  const std::vector<Implementation<Args>>& implementations() const { return impls_; }

  const Implementation<Args>* find(std::string_view name) const {
    for (const auto& i : impls_)
      if (i.name == name) return &i;
    return nullptr;
  }

  static Verdict judge(const Implementation<Args>& impl, const Args& args) {
    for (const auto& req : impl.requirements)
      if (!req.met(args)) return {impl.name, false, req.text, req.reason(args)};
    return {impl.name, true, {}, {}};
  }
  static bool eligible(const Implementation<Args>& impl, const Args& args) {
    for (const auto& req : impl.requirements)
      if (!req.met(args)) return false;
    return true;
  }

  // One verdict per implementation, in order of preference: what `explain` prints.
  std::vector<Verdict> explain(const Args& args) const {
    std::vector<Verdict> out;
    for (const auto& impl : impls_) out.push_back(judge(impl, args));
    return out;
  }

  // The route for this call: honors DEW_IMPL pins and exclusions, records the route.
  const Implementation<Args>& select(std::string_view op, const Args& args,
                                     std::string_view case_label) const {
    auto pinned = pinned_implementation(op);
    for (const auto& impl : impls_) {
      if ((pinned && impl.name != *pinned) || excluded(op, impl.name) || !eligible(impl, args)) continue;
      record_route(op, impl.name, case_label);
      return impl;
    }
    std::vector<Verdict> verdicts;  // nothing is eligible: each candidate's reason, for the error
    for (const auto& impl : impls_) {
      if (pinned && impl.name != *pinned) continue;
      verdicts.push_back(excluded(op, impl.name)
                             ? Verdict{impl.name, false, "not excluded by DEW_IMPL", "excluded by DEW_IMPL"}
                             : judge(impl, args));
    }
    throw_no_implementation(op, case_label, pinned, verdicts, names());
  }

  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& i : impls_) n.push_back(i.name);
    return n;
  }

 private:
  std::vector<Implementation<Args>> impls_;
};

}  // namespace dew::select
