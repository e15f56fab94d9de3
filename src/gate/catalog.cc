// Builds the catalog from ops.def: one type-erased entry per op name.
#include "gate/catalog.h"

#include <algorithm>
#include <chrono>

#include "ops/op_headers.h"  // every op folder of ops.def (generated)

namespace dew::gate {
namespace {

// NOTE [timing short calls]
// Five calls of a 0.02 ms op take 0.1 ms, and one stall of the host (a vCPU descheduled, a neighbour's
// burst) spans them all, so their median reads the stall. So a row is timed over at least min_seconds of
// calls as well as `reps` calls (as Google Benchmark's min time), up to kMaxCalls, and its median is of them
// all.
constexpr int kMaxCalls = 10000;

template <class Op>
BenchTiming time_case(const std::string& impl_name, const ops::Case<typename Op::Args>& c, DType dtype,
                      int reps, double min_seconds) {
  BenchTiming t;
  auto args = c.make(dtype, RandomKey{1, 0x6a7e, 0});
  const auto* impl = Op::registry().find(impl_name);
  auto verdict = Op::registry().judge(*impl, args);
  if (!verdict.eligible) {
    t.refusal = verdict.requirement + " (" + verdict.reason + ")";
    return t;
  }
  std::vector<Tensor> outs = ops::allocate_outputs<Op>(args);
  for (const Tensor* in : args.inputs()) t.bytes += double(in->numel() * int64_t(dtype_size(in->dtype())));
  for (const Tensor& out : outs) t.bytes += double(out.numel() * int64_t(dtype_size(out.dtype())));
  if constexpr (requires { Op::flops(args); }) t.flops = Op::flops(args);
  if constexpr (requires { Op::gemm_shape(args); }) t.gemm = Op::gemm_shape(args);
  auto w0 = std::chrono::steady_clock::now();
  impl->run(args, outs);  // warm-up; a call slower than a second is timed once more only
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() > 1.0) reps = 1;
  double timed = 0;
  for (int r = 0; r < reps || (timed < min_seconds && r < kMaxCalls); ++r) {
    auto t0 = std::chrono::steady_clock::now();
    impl->run(args, outs);
    t.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    timed += t.seconds.back();
  }
  t.ran = true;
  return t;
}

template <class Op>
ops::Case<typename Op::Args> find_case(const std::string& op, const std::string& case_name) {
  for (auto& c : Op::cases(op))
    if (c.name == case_name) return c;
  fail("op {} has no case '{}'", op, case_name);
}

template <class Op>
OpEntry make_entry(const std::string& name, const std::string& folder) {
  OpEntry e{name, folder, {}, {}, {}, {}, {}, {}};
  for (const auto& impl : Op::registry().implementations()) {
    ImplInfo info{impl.name, {}, {}};
    for (const auto& req : impl.requirements) {
      info.requirements.push_back(req.text);
      if (!req.dtypes.empty()) info.dtypes = req.dtypes;
    }
    e.implementations.push_back(info);
  }
  for (const auto& c : Op::cases(name)) e.cases.push_back({c.name, c.tags, c.dtypes});
  e.check = [name](const std::string& impl, const std::string& case_name, DType dtype, uint64_t seed) {
    return run_gate<Op>(name, impl, find_case<Op>(name, case_name), dtype, seed);
  };
  e.bench = [name](const std::string& impl, const std::string& case_name, DType dtype, int reps,
                   double min_seconds) {
    return time_case<Op>(impl, find_case<Op>(name, case_name), dtype, reps, min_seconds);
  };
  e.derivatives = [name](const std::string& case_name, uint64_t seed) {
    return check_op_derivatives<Op>(name, find_case<Op>(name, case_name), seed);
  };
  e.rules = [name](const std::string& impl, const std::string& case_name, DType dtype, uint64_t seed) {
    return run_rule_gate<Op>(name, impl, find_case<Op>(name, case_name), dtype, seed);
  };
  return e;
}

}  // namespace

std::string portable_everywhere() {
  std::vector<std::string> pins;
  for (const auto& e : catalog()) pins.push_back(e.name + ":portable");
  return fmt::format("{}", fmt::join(pins, ","));
}

std::string candidate_first_in_folder(const std::string& op, const std::string& impl) {
  const OpEntry* entry = find_op(op);
  DEW_REQUIRE(entry, "[gate] no op '{}' in the catalog", op);
  std::vector<std::string> exclusions;
  for (const auto& e : catalog()) {
    if (e.folder != entry->folder) continue;
    const auto has = std::find_if(e.implementations.begin(), e.implementations.end(),
                                  [&](const ImplInfo& i) { return i.name == impl; });
    if (has == e.implementations.end()) continue;
    for (auto other = e.implementations.begin(); other != has; ++other)
      exclusions.push_back(e.name + ":-" + other->name);
  }
  return fmt::format("{}", fmt::join(exclusions, ","));
}

bool CaseInfo::has_tag(std::string_view tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

const std::vector<OpEntry>& catalog() {
  using namespace dew::ops;
  static const std::vector<OpEntry> entries = [] {
    std::vector<OpEntry> v;
#define DEW_OP(name, folder, type) v.push_back(make_entry<type>(#name, #folder));
#include "ops/ops.def"
#undef DEW_OP
    return v;
  }();
  return entries;
}

const OpEntry* find_op(std::string_view name) {
  for (const auto& e : catalog())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace dew::gate
