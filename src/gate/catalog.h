// The catalog: every op of ops.def with its implementations, their requirements, its cases and a
// type-erased entry into the gate. `dew ops`, `dew check` and the test suite all read it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gate/gate.h"
#include "gate/op_derivatives.h"
#include "gate/rule_gate.h"

namespace dew::gate {

struct ImplInfo {
  std::string name;
  std::vector<std::string> requirements;
  std::vector<DType> dtypes;  // the dtypes its dtype requirement allows on any machine; empty: any
};

struct CaseInfo {
  std::string name;
  std::vector<std::string> tags;
  std::vector<DType> dtypes;
  bool has_tag(std::string_view tag) const;
};

// One benchmark measurement of an implementation on a case: seconds per call over the repetitions (at
// least `reps`, and more until `min_seconds` of calls are timed: NOTE [timing short calls]), and the work
// of one call (bytes of inputs and outputs; FLOPs where the op counts them).
struct BenchTiming {
  bool ran = false;
  std::string refusal;
  std::vector<double> seconds;
  double bytes = 0, flops = 0;
  std::vector<int64_t>
      gemm;  // {M, N, K, batch, transpose_b} for GEMM-shaped ops: the library is timed alone too
};

struct OpEntry {
  std::string name, folder;
  std::vector<ImplInfo> implementations;
  std::vector<CaseInfo> cases;
  std::function<Report(const std::string& impl, const std::string& case_name, DType, uint64_t seed)> check;
  std::function<BenchTiming(const std::string& impl, const std::string& case_name, DType, int reps,
                            double min_seconds)>
      bench;
  std::function<DerivativeReport(const std::string& case_name, uint64_t seed)> derivatives;
  // The rule rows: vjp and jvp at the dtype with the forward on `impl` (rule_gate.h).
  std::function<Report(const std::string& impl, const std::string& case_name, DType, uint64_t seed)> rules;
};

const std::vector<OpEntry>& catalog();
const OpEntry* find_op(std::string_view name);

}  // namespace dew::gate
