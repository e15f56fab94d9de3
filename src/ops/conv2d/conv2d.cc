// conv2d, conv2d_input_grad and conv2d_weight_grad: validation, output rules, registry, cases and the
// public functions.
#include "ops/conv2d/conv2d.h"

namespace dew::ops {

std::vector<const Tensor*> Conv2dArgs::inputs() const {
  std::vector<const Tensor*> v;
  for (const Tensor* t : {&dy, &x, &weight, &bias})
    if (t->defined()) v.push_back(t);
  return v;
}
std::vector<Tensor*> Conv2dArgs::mutable_inputs() {
  std::vector<Tensor*> v;
  for (Tensor* t : {&dy, &x, &weight, &bias})
    if (t->defined()) v.push_back(t);
  return v;
}

Conv2dGeometry conv2d_geometry(const Conv2dArgs& a) {
  const Shape &image = a.input_shape, &kernel = a.weight_shape;
  const Conv2dOptions& o = a.options;
  Conv2dGeometry g{};
  g.B = image[0], g.C = image[1], g.H = image[2], g.W = image[3];
  g.O = kernel[0], g.Cg = kernel[1], g.kh = kernel[2], g.kw = kernel[3], g.groups = o.groups;
  g.Og = g.O / std::max<int64_t>(1, o.groups);
  g.sh = o.stride[0], g.sw = o.stride[1], g.ph = o.padding[0], g.pw = o.padding[1];
  g.dh = o.dilation[0], g.dw = o.dilation[1];
  g.OH = (g.H + 2 * g.ph - g.dh * (g.kh - 1) - 1) / std::max<int64_t>(1, g.sh) + 1;
  g.OW = (g.W + 2 * g.pw - g.dw * (g.kw - 1) - 1) / std::max<int64_t>(1, g.sw) + 1;
  return g;
}

std::vector<OutputSpec> Conv2d::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  const Conv2dOptions& o = a.options;
  DEW_REQUIRE(is_floating(a.dtype()), "[{}] dtype {}; expected a floating dtype", op, dtype_name(a.dtype()));
  for (const Tensor* t : a.inputs())
    DEW_REQUIRE(t->dtype() == a.dtype(), "[{}] an input is {}; expected every input {}", op, t->describe(),
                dtype_name(a.dtype()));
  DEW_REQUIRE(a.input_shape.size() == 4, "[{}] images of shape {}; expected (B,C,H,W)", op,
              shape_str(a.input_shape));
  DEW_REQUIRE(a.weight_shape.size() == 4, "[{}] weight of shape {}; expected (O, C/groups, kh, kw)", op,
              shape_str(a.weight_shape));
  for (int i = 0; i < 2; ++i)
    DEW_REQUIRE(
        o.stride[i] >= 1 && o.dilation[i] >= 1 && o.padding[i] >= 0,
        "[{}] stride ({}, {}), padding ({}, {}), dilation ({}, {}); expected stride and dilation >= 1, "
        "padding >= 0",
        op, o.stride[0], o.stride[1], o.padding[0], o.padding[1], o.dilation[0], o.dilation[1]);
  const int64_t C = a.input_shape[1], O = a.weight_shape[0];
  DEW_REQUIRE(o.groups >= 1 && C % o.groups == 0 && O % o.groups == 0,
              "[{}] groups {} with {} input and {} output channels; expected groups >= 1 dividing both", op,
              o.groups, C, O);
  DEW_REQUIRE(
      a.weight_shape[1] * o.groups == C,
      "[{}] weight of shape {} for images of {} channels in {} groups; expected {} channels per group", op,
      shape_str(a.weight_shape), C, o.groups, C / o.groups);
  const Conv2dGeometry g = conv2d_geometry(a);
  DEW_REQUIRE(
      g.kh >= 1 && g.kw >= 1 && g.OH >= 1 && g.OW >= 1,
      "[{}] a {}x{} kernel (dilation {}x{}) over {}x{} images padded by {}x{} leaves no output; expected "
      "the dilated kernel to fit",
      op, g.kh, g.kw, g.dh, g.dw, g.H, g.W, g.ph, g.pw);
  const Shape out_shape{g.B, g.O, g.OH, g.OW};
  if (a.pass != ConvPass::forward)
    DEW_REQUIRE(a.dy.shape() == out_shape, "[{}] dy is {}; expected the convolution's output {}", op,
                a.dy.describe(), shape_str(out_shape));
  if (a.pass != ConvPass::input_grad)
    DEW_REQUIRE(a.x.shape() == a.input_shape, "[{}] x is {}; expected {}", op, a.x.describe(),
                shape_str(a.input_shape));
  if (a.pass != ConvPass::weight_grad)
    DEW_REQUIRE(a.weight.shape() == a.weight_shape, "[{}] weight is {}; expected {}", op, a.weight.describe(),
                shape_str(a.weight_shape));
  if (a.bias.defined())
    DEW_REQUIRE(a.pass == ConvPass::forward && a.bias.shape() == Shape({O}),
                "[{}] bias is {}; expected ({}) on the forward pass", op, a.bias.describe(), O);
  switch (a.pass) {
    case ConvPass::forward:
      return {{out_shape, a.dtype()}};
    case ConvPass::input_grad:
      return {{a.input_shape, a.dtype()}};
    case ConvPass::weight_grad:
      return {{a.weight_shape, a.dtype()}};
  }
  return {};
}

std::string Conv2d::profile_label(const Args& a) {
  const Conv2dGeometry g = conv2d_geometry(a);
  return fmt::format("{} {}x{}x{}x{} k{}x{}/{} -> {}", dtype_name(a.dtype()), g.B, g.C, g.H, g.W, g.kh, g.kw,
                     g.sh, g.O);
}

double Conv2d::flops(const Args& a) {
  const Conv2dGeometry g = conv2d_geometry(a);
  return 2.0 * double(g.B * g.O * g.OH * g.OW) * double(g.Cg * g.kh * g.kw);
}

const select::Registry<Conv2dArgs>& Conv2d::registry() {
  static const select::Registry<Conv2dArgs> r = [] {
    select::Registry<Conv2dArgs> reg;
    add_conv2d_onednn(reg);
    add_conv2d_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<Conv2dArgs>> Conv2d::cases(std::string_view op) {
  const ConvPass pass = op == "conv2d"              ? ConvPass::forward
                        : op == "conv2d_input_grad" ? ConvPass::input_grad
                                                    : ConvPass::weight_grad;
  auto make = [=](Shape image, Shape kernel, Conv2dOptions o, bool bias) {
    return [=](DType t, RandomKey k) {
      Conv2dArgs a;
      a.options = o, a.pass = pass, a.input_shape = image, a.weight_shape = kernel;
      const Conv2dGeometry g = conv2d_geometry(a);
      if (pass != ConvPass::input_grad) a.x = random_input(image, t, k);
      if (pass != ConvPass::weight_grad) a.weight = random_input(kernel, t, {k.seed, k.stream + 1});
      if (pass == ConvPass::forward && bias) a.bias = random_input({kernel[0]}, t, {k.seed, k.stream + 2});
      if (pass != ConvPass::forward) a.dy = random_input({g.B, g.O, g.OH, g.OW}, t, {k.seed, k.stream + 3});
      return a;
    };
  };
  Conv2dOptions same, down, odd, wide;
  same.padding = {1, 1};
  down.stride = {2, 2}, down.padding = {1, 1};
  odd.groups = 2, odd.dilation = {2, 1}, odd.padding = {2, 0}, odd.stride = {1, 2};
  wide.padding = {1, 1};
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {
      {"unet_3x3", {"ci"}, all, make({2, 4, 6, 6}, {6, 4, 3, 3}, same, true)},
      {"strided_down", {"ci", "edge"}, all, make({2, 3, 7, 7}, {4, 3, 3, 3}, down, true)},
      {"grouped_dilated", {"ci", "edge"}, all, make({1, 4, 8, 7}, {6, 2, 3, 2}, odd, false)},
      {"pointwise", {"ci"}, all, make({2, 8, 5, 5}, {4, 8, 1, 1}, {}, false)},
      {"unet_28", {"bench"}, {DType::f32, DType::bf16}, make({64, 64, 28, 28}, {64, 64, 3, 3}, wide, true)},
      {"unet_14",
       {"bench"},
       {DType::f32, DType::bf16},
       make({64, 128, 14, 14}, {128, 128, 3, 3}, wide, true)},
      {"unet_7", {"bench"}, {DType::f32, DType::bf16}, make({64, 128, 7, 7}, {128, 128, 3, 3}, wide, true)}};
}

}  // namespace dew::ops

namespace dew {

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options) {
  ops::Conv2dArgs a;
  a.x = x, a.weight = weight, a.bias = bias, a.options = options;
  a.input_shape = x.shape(), a.weight_shape = weight.shape();
  return ops::run_op<ops::Conv2d>(a)[0];
}

Tensor conv2d_input_grad(const Tensor& dy, const Tensor& weight, const Shape& input_shape,
                         const Conv2dOptions& options) {
  ops::Conv2dArgs a;
  a.dy = dy, a.weight = weight, a.options = options, a.pass = ops::ConvPass::input_grad;
  a.input_shape = input_shape, a.weight_shape = weight.shape();
  return ops::run_op<ops::Conv2d>(a)[0];
}

Tensor conv2d_weight_grad(const Tensor& dy, const Tensor& x, const Shape& weight_shape,
                          const Conv2dOptions& options) {
  ops::Conv2dArgs a;
  a.dy = dy, a.x = x, a.options = options, a.pass = ops::ConvPass::weight_grad;
  a.input_shape = x.shape(), a.weight_shape = weight_shape;
  return ops::run_op<ops::Conv2d>(a)[0];
}

}  // namespace dew
