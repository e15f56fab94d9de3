// conv2d's rules. With <., .> the sum of products: <dy, conv2d(x, w)> = <conv2d_input_grad(dy, w), x>
// = <conv2d_weight_grad(dy, x), w>, so each of the three bilinear passes has its vjp in the other two
// (and a bias's gradient is dy summed over images and positions); each jvp is the pass on one tangent
// plus the pass on the other.
#include "ops/conv2d/conv2d.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation Conv2d::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Conv2d::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Conv2d::vjp(const Args& a) {
  const char* op = name(a).data();
  const SavedTensor dy(a.dy, op), x(a.x, op), weight(a.weight, op);
  const Conv2dOptions o = a.options;
  const Shape image = a.input_shape, kernel = a.weight_shape;
  const ConvPass pass = a.pass;
  const bool has_bias = a.bias.defined();
  const size_t n_inputs = a.inputs().size();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor& g = d[0];
    if (!g.defined()) return std::vector<Tensor>(n_inputs);
    switch (pass) {
      case ConvPass::forward: {  // inputs x, weight[, bias]
        std::vector<Tensor> grads{conv2d_input_grad(g, weight.get(), image, o),
                                  conv2d_weight_grad(g, x.get(), kernel, o)};
        if (has_bias) grads.push_back(sum(g, {0, 2, 3}));
        return grads;
      }
      case ConvPass::input_grad:  // inputs dy, weight: <g, dx(dy, w)> = <conv2d(g, w), dy>
        return {conv2d(g, weight.get(), Tensor(), o), conv2d_weight_grad(dy.get(), g, kernel, o)};
      case ConvPass::weight_grad:  // inputs dy, x: <g, dw(dy, x)> = <conv2d(x, g), dy>
        return {conv2d(x.get(), g, Tensor(), o), conv2d_input_grad(dy.get(), g, image, o)};
    }
    return std::vector<Tensor>(n_inputs);
  };
}

std::vector<Tensor> Conv2d::jvp(const Args& a, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  const Conv2dOptions& o = a.options;
  Tensor out;
  switch (a.pass) {
    case ConvPass::forward:
      if (t[0].defined()) out = conv2d(t[0], a.weight, Tensor(), o);
      if (t[1].defined()) out = add_defined(out, conv2d(a.x, t[1], Tensor(), o));
      if (a.bias.defined() && t[2].defined()) {
        const Tensor bias = t[2].reshape({1, t[2].size(0), 1, 1});
        out = out.defined() ? add(out, bias) : bias.expand(infer(a)[0].shape).contiguous();
      }
      break;
    case ConvPass::input_grad:
      if (t[0].defined()) out = conv2d_input_grad(t[0], a.weight, a.input_shape, o);
      if (t[1].defined()) out = add_defined(out, conv2d_input_grad(a.dy, t[1], a.input_shape, o));
      break;
    case ConvPass::weight_grad:
      if (t[0].defined()) out = conv2d_weight_grad(t[0], a.x, a.weight_shape, o);
      if (t[1].defined()) out = add_defined(out, conv2d_weight_grad(a.dy, t[1], a.weight_shape, o));
      break;
  }
  return {out};
}

}  // namespace dew::ops
