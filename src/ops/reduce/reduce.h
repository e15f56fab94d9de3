// Reductions over axes: sum mean max min logsumexp (output in x's dtype) and argmax (i64, one axis,
// first index of the maximum). keepdim keeps the reduced axes as size 1.
#pragma once

#include <optional>

#include "ops/op.h"
#include "ops/reduce/reduce_fn.h"

namespace dew::ops {

std::string_view reduce_name(ReduceFn f);
ReduceFn reduce_from_name(std::string_view name);

struct ReduceArgs : OneInputArgs {
  std::vector<int64_t> axes;  // normalized by infer(); empty = all
  bool keepdim = false;
  ReduceFn fn;
};

// A reduction whose reduced axes are one run of consecutive axes of a contiguous x, seen as an
// (outer, reduced, inner) array: the tiers' kernels read it in place (the portable path first copies the
// reduced axes last). inner = 1: rows; inner > 1: columns.
struct ReducedRun {
  int64_t outer = 1, reduced = 1, inner = 1;
};
std::optional<ReducedRun> reduced_run(const ReduceArgs& a);
// What cpu.<tier>.rows (inner = 1) and cpu.<tier>.columns (inner > 1, not argmax) take.
enum class ReducedRunKind { rows, columns };
select::Requirement<ReduceArgs> reduced_run_requirement(ReducedRunKind kind);

// cpu.<tier>.rows (a run that ends at the last axis: cpu_rows.cc) and cpu.<tier>.columns (any other
// run: cpu_columns.cc).
DEW_DECLARE_CPU_TIERS(void add_reduce_rows_cpu(select::Registry<ReduceArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_reduce_columns_cpu(select::Registry<ReduceArgs>& r))
void add_reduce_portable(select::Registry<ReduceArgs>& r);
void add_reduce_cuda(select::Registry<ReduceArgs>& r);

struct Reduce {
  DEW_OP_TYPE_MEMBERS(ReduceArgs);
  static std::string_view name(const Args& a) { return reduce_name(a.fn); }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

}  // namespace dew::ops
