// patchify and unpatchify: images (B,C,H,W) to patch tokens (B, (H/p)(W/p), C p p) and back, the
// tokens in row-major patch order and each token's values channel-major (c, i, j) — the order of a
// Conv2d weight (out, C, p, p) flattened, so a DiT's patch embedding is that weight reshaped as a
// Linear. unpatchify is patchify's exact inverse; both only move values.
#pragma once

#include <dew/image_ops.h>

#include "ops/op.h"

namespace dew::ops {

struct PatchifyArgs {
  Tensor x;                       // patchify: (B,C,H,W); unpatchify: (B,T,C p p)
  int64_t patch = 2;              // p
  int64_t height = 0, width = 0;  // unpatchify: the image's H and W
  bool inverse = false;           // unpatchify
  DType dtype() const { return x.dtype(); }
  Device device() const { return x.device(); }
  std::vector<const Tensor*> inputs() const { return {&x}; }
  std::vector<Tensor*> mutable_inputs() { return {&x}; }
};

struct Patchify {
  DEW_OP_TYPE_MEMBERS(PatchifyArgs);
  static std::string_view name(const Args& a) { return a.inverse ? "unpatchify" : "patchify"; }
  DEW_CASE_LABEL_BY_DTYPE;
  DEW_OP_RULES;
};

// The image (B,C,H,W) of a call as a view (B, H/p, W/p, C, p, p) of `image`: the tokens' order.
Tensor patch_view(const Tensor& image, int64_t patch);

void add_patchify_portable(select::Registry<PatchifyArgs>& r);

}  // namespace dew::ops
