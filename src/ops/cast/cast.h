// cast: converts a tensor to another dtype. Floats round to nearest even (NaN and Inf kept); floats to
// integers truncate toward zero, saturate at the integer's range, and send NaN to 0; to bool is x != 0.
#pragma once

#include "ops/op.h"

namespace dew::ops {

struct CastArgs : OneInputArgs {
  DType to;
};

struct Cast {
  DEW_OP_TYPE_MEMBERS(CastArgs);
  static std::string_view name(const Args&) { return "cast"; }
  static std::string case_label(const Args& a);
  DEW_OP_RULES;
};

// The portable cast into `out`; the float64 reference takes it for integer targets, where it is exact.
void cast_portable(const CastArgs& args, Tensor& out);
void add_cast_portable(select::Registry<CastArgs>& r);
void add_cast_cuda(select::Registry<CastArgs>& r);

// Casts into an existing contiguous tensor of x's shape (its dtype is the target).
void cast_into(const Tensor& x, Tensor& out);

}  // namespace dew::ops
