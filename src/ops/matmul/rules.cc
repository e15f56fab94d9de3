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

}  // namespace

Differentiation Matmul::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> Matmul::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule Matmul::vjp(const Args& args) {
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
