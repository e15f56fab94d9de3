// upsample_nearest: images (B,C,H,W) to (B, C, H f, W f), each pixel repeated over an f x f block
// (torch's interpolate(mode="nearest") at an integer scale). It only moves values; its vjp sums each
// block of the gradient back to its pixel.
#pragma once

#include <dew/image_ops.h>

#include "ops/op.h"

namespace dew::ops {

struct UpsampleNearestArgs : OneInputArgs {
  int64_t factor = 2;
};

struct UpsampleNearest {
  DEW_OP_TYPE_MEMBERS(UpsampleNearestArgs);
  static std::string_view name(const Args&) { return "upsample_nearest"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

void add_upsample_nearest_portable(select::Registry<UpsampleNearestArgs>& r);

}  // namespace dew::ops
