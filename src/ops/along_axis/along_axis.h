// Ops along one axis with an output of the input's shape: softmax and log_softmax (stable: the row
// maximum is subtracted first) and cumsum.
#pragma once

#include "ops/along_axis/along_axis_fn.h"
#include "ops/op.h"

namespace dew::ops {

struct AlongAxisArgs : OneInputArgs {
  int64_t axis;
  AlongAxisFn fn;
};

struct AlongAxis {
  DEW_OP_TYPE_MEMBERS(AlongAxisArgs);
  static std::string_view name(const Args& a);
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

void add_along_axis_portable(select::Registry<AlongAxisArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_along_axis_cpu(select::Registry<AlongAxisArgs>& r))
void add_along_axis_cuda(select::Registry<AlongAxisArgs>& r);

}  // namespace dew::ops
