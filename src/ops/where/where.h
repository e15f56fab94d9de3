// where(condition, a, b): a where condition is true, else b; the three broadcast together.
#pragma once

#include "ops/op.h"

namespace dew::ops {

struct WhereArgs {
  Tensor condition, a, b;
  DType dtype() const { return a.dtype(); }
  Device device() const { return a.device(); }
  std::vector<const Tensor*> inputs() const { return {&condition, &a, &b}; }
  std::vector<Tensor*> mutable_inputs() { return {&condition, &a, &b}; }
};

struct Where {
  DEW_OP_TYPE_MEMBERS(WhereArgs);
  static std::string_view name(const Args&) { return "where"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

void add_where_portable(select::Registry<WhereArgs>& r);
void add_where_cuda(select::Registry<WhereArgs>& r);

}  // namespace dew::ops
