// matmul's vjp and jvp: y = act(scale op(a) @ op(b) + bias) + residual. With an activation, the
// pre-activation z is recomputed in the rule (one more product) rather than kept from the forward.
#include <optional>

#include "ops/matmul/matmul.h"
#include "ops/rules_common.h"
#include "ops/unary/unary.h"

namespace dew::ops {
namespace {

// scale op(a) @ op(b) + bias: the pre-activation.
Tensor pre_activation(const Tensor& a, const Tensor& b, const MatmulOptions& o) {
  MatmulOptions p;
  p.transpose_a = o.transpose_a;
  p.transpose_b = o.transpose_b;
  p.bias = o.bias;
  p.scale = o.scale;
  p.tf32 = o.tf32;
  return matmul(a, b, p);
}

// op(a) @ op(b) with the transposes given, scaled as the forward was (and TF32 where it was).
Tensor product(const Tensor& a, const Tensor& b, bool ta, bool tb, const MatmulOptions& o) {
  MatmulOptions p;
  p.transpose_a = ta;
  p.transpose_b = tb;
  p.scale = o.scale;
  p.tf32 = o.tf32;
  return matmul(a, b, p);
}

// The gated unit's derivatives at the product's halves z = (gate, up): with cotangent or tangent d of
// each half (both, or one undefined), the glu op's backward gives d_gate = d u act'(g), d_up = d act(g).
GluGradients glu_backward(Activation act, const Tensor& d, const Tensor& gate, const Tensor& up) {
  return act == Activation::silu ? swiglu_backward(d, gate, up)
                                 : geglu_backward(d, gate, up, act == Activation::gelu_tanh);
}

// The product alone of a call with a gated unit: its bias and scale, no activation, both halves out.
MatmulArgs product_of(const MatmulArgs& args) {
  MatmulArgs p = args;
  p.options.glu = false;
  p.options.activation = Activation::none;
  return p;
}

Tensor half(const Tensor& z, int h) {
  const int64_t F = z.size(-1) / 2;
  return z.slice(-1, h * F, (h + 1) * F);
}

}  // namespace

Differentiation Matmul::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Matmul::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Matmul::vjp(const Args& args) {
  if (args.options.glu) {  // back through the gated unit to the product's halves, then the product's rule
    const VjpRule through_product = vjp(product_of(args));
    const SavedTensor a(args.a, "matmul"), b(args.b, "matmul"), bias(args.options.bias, "matmul");
    const MatmulOptions o = args.options;
    return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
      MatmulOptions with_bias = o;
      with_bias.bias = bias.get();
      const Tensor z = [&] {
        const ProfilePhase phase("recompute");
        return pre_activation(a.get(), b.get(), with_bias);
      }();
      const GluGradients g = glu_backward(o.activation, d[0], half(z, 0), half(z, 1));
      return through_product({concat({g.d_gate, g.d_up}, -1)}, outs);
    };
  }
  const SavedTensor a(args.a, "matmul"), b(args.b, "matmul");
  const SavedTensor bias(args.options.bias, "matmul");
  const MatmulOptions o{
      args.options.transpose_a, args.options.transpose_b, Tensor(), args.options.activation, Tensor(),
      args.options.scale,       args.options.tf32};
  const bool has_bias = args.options.bias.defined(), has_residual = args.options.residual.defined();
  const Shape a_shape = args.a.shape(), b_shape = args.b.shape();
  const Shape bias_shape = has_bias ? args.options.bias.shape() : Shape{};
  const Shape residual_shape = has_residual ? args.options.residual.shape() : Shape{};
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    Tensor dz = d[0];
    if (o.activation != Activation::none) {
      MatmulOptions with_bias = o;
      with_bias.bias = bias.get();
      const ProfilePhase phase("recompute");
      dz = times_unary_derivative(unary_of(o.activation), dz, pre_activation(a.get(), b.get(), with_bias),
                                  Tensor());
    }
    // d op(a) = scale dz op(b)^T and d op(b) = scale op(a)^T dz, transposed back where op transposes.
    std::optional<ProfilePhase> phase(std::in_place, "input gradient");
    const Tensor da = o.transpose_a ? product(b.get(), dz, o.transpose_b, true, o)
                                    : product(dz, b.get(), false, !o.transpose_b, o);
    phase.emplace("weight gradient");
    Tensor db;
    if (b_shape.size() == 2 && a_shape.size() > 2 && !o.transpose_a) {
      // b shared by every batch (a Linear layer): fold the batch into rows, one (K|N, R) product,
      // instead of a per-batch d op(b) summed afterwards (a batch of weight-sized transients).
      const Tensor a2 = a.get().contiguous().reshape({-1, a_shape.back()});
      const Tensor dz2 = dz.contiguous().reshape({-1, dz.shape().back()});
      db = o.transpose_b ? product(dz2, a2, true, false, o) : product(a2, dz2, true, false, o);
    } else {
      db = o.transpose_b ? product(dz, a.get(), true, o.transpose_a, o)
                         : product(a.get(), dz, !o.transpose_a, false, o);
    }
    phase.reset();
    std::vector<Tensor> grads{sum_to_shape(da, a_shape), sum_to_shape(db, b_shape)};
    if (has_bias) grads.push_back(sum_to_shape(dz, bias_shape));
    if (has_residual) grads.push_back(sum_to_shape(d[0], residual_shape));
    return grads;
  };
}

std::vector<Tensor> Matmul::jvp(const Args& args, const std::vector<Tensor>& outs,
                                const std::vector<Tensor>& t) {
  const MatmulOptions& o = args.options;
  if (o.glu) {  // y' = act'(g) g' u + act(g) u', the glu op's d_gate with g' plus its d_up with u'
    const Tensor z = pre_activation(args.a, args.b, o);
    const Tensor dz = jvp(product_of(args), {z}, t)[0];
    if (!dz.defined()) return {Tensor()};
    const Tensor gate = half(z, 0), up = half(z, 1);
    return {add(glu_backward(o.activation, half(dz, 0), gate, up).d_gate,
                glu_backward(o.activation, half(dz, 1), gate, up).d_up)};
  }
  Tensor dz;
  if (t[0].defined()) dz = product(t[0], args.b, o.transpose_a, o.transpose_b, o);
  if (t[1].defined()) dz = add_defined(dz, product(args.a, t[1], o.transpose_a, o.transpose_b, o));
  size_t next = 2;
  if (o.bias.defined()) {
    if (t[next].defined()) dz = add_defined(dz, t[next]);
    ++next;
  }
  Tensor dy;
  if (dz.defined()) {
    dz = dz.expand(outs[0].shape());  // a bias's tangent alone is (N)
    dy =
        o.activation == Activation::none
            ? dz
            : times_unary_derivative(unary_of(o.activation), dz, pre_activation(args.a, args.b, o), Tensor());
  }
  if (o.residual.defined() && t[next].defined()) dy = add_defined(dy, t[next]);
  return {dy};
}

}  // namespace dew::ops
