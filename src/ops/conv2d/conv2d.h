// conv2d and its two gradients, one op type: the forward cross-correlation (B,C,H,W) x (O,C/g,kh,kw)
// -> (B,O,OH,OW) with an optional bias, conv2d_input_grad (dy, weight) -> dx and conv2d_weight_grad
// (dy, x) -> dweight. The three are bilinear and each other's adjoints, so every rule of each is
// written with the other two (rules.cc).
#pragma once

#include <dew/image_ops.h>

#include "ops/op.h"

namespace dew::ops {

enum class ConvPass { forward, input_grad, weight_grad };

struct Conv2dArgs {
  Tensor dy, x, weight, bias;  // forward: x, weight, bias; input_grad: dy, weight; weight_grad: dy, x
  Conv2dOptions options;
  Shape input_shape, weight_shape;  // the image's and the weight's shapes, whichever pass
  ConvPass pass = ConvPass::forward;
  DType dtype() const { return pass == ConvPass::forward ? x.dtype() : dy.dtype(); }
  Device device() const { return pass == ConvPass::forward ? x.device() : dy.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

// Every size of a call: images (B,C,H,W), weight (O,Cg,kh,kw), output (B,O,OH,OW), Cg = C/groups.
struct Conv2dGeometry {
  int64_t B, C, H, W, O, Cg, Og, kh, kw, OH, OW, groups;
  int64_t sh, sw, ph, pw, dh, dw;  // stride, padding, dilation
};
Conv2dGeometry conv2d_geometry(const Conv2dArgs& a);

struct Conv2d {
  DEW_OP_TYPE_MEMBERS(Conv2dArgs);
  static std::string_view name(const Args& a) {
    return a.pass == ConvPass::forward      ? "conv2d"
           : a.pass == ConvPass::input_grad ? "conv2d_input_grad"
                                            : "conv2d_weight_grad";
  }
  DEW_CASE_LABEL_BY_DTYPE;
  static std::string profile_label(const Args& a);
  static double flops(const Args& a);
  DEW_OP_RULES;
};

void add_conv2d_portable(select::Registry<Conv2dArgs>& r);
void add_conv2d_onednn(select::Registry<Conv2dArgs>& r);

}  // namespace dew::ops
