// Reductions over axes: sum mean max min logsumexp (output in x's dtype) and argmax (i64, one axis,
// first index of the maximum). keepdim keeps the reduced axes as size 1.
#pragma once

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

// cpu.<tier>.columns: sum and mean over leading axes (cpu.cc).
DEW_DECLARE_CPU_TIERS(void add_reduce_cpu(select::Registry<ReduceArgs>& r))
void add_reduce_cuda(select::Registry<ReduceArgs>& r);

struct Reduce {
  using Args = ReduceArgs;
  static std::string_view name(const Args& a) { return reduce_name(a.fn); }
  static std::string case_label(const Args& a) { return std::string(dtype_name(a.dtype())); }
  static std::vector<OutputSpec> infer(const Args& a);
  static std::vector<Truth> reference(const Args& args64);
  static const select::Registry<Args>& registry();
  static std::vector<Case<Args>> cases(std::string_view op);
  DEW_OP_RULES;
};

}  // namespace dew::ops
