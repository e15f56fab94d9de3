// Derivatives of attention's derivatives (NOTE [attention's higher derivatives]): a gradient through
// attention's jvp (MeanFlow's shape), the jvp of that jvp, the jvp of a gradient (a Hessian-vector
// product), a gradient of a gradient (create_graph) and a gradient reaching lse, each against float64
// central differences, over the mask features: causal with grouped KV heads, a sliding window with a
// softcap and more keys than queries, packed segments with sinks, and rows that see no key.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "check_derivatives.h"

namespace dew {
namespace {

using testing::check_derivatives;
using testing::draw;
using Ts = std::vector<Tensor>;

struct Variant {
  std::string name;
  Shape q, kv;  // (B,T,H,D), (B,S,Hkv,D)
  AttentionOptions options;
};

std::vector<Variant> variants() {
  std::vector<Variant> out;
  AttentionOptions causal;
  causal.causal = true;
  out.push_back({"causal, 4 heads over 2 KV heads", {1, 5, 4, 4}, {1, 5, 2, 4}, causal});
  AttentionOptions window;
  window.causal = true;
  window.window = 2;
  window.softcap = 1.5;
  out.push_back({"window 2, softcap, S > T", {1, 3, 2, 4}, {1, 5, 1, 4}, window});
  AttentionOptions packed;
  packed.q_segments = Tensor::from_values({0, 0, 1, 1, 0, 1, 1, 1}, {2, 4}, DType::i64);
  packed.k_segments = packed.q_segments;
  packed.sinks = draw({2}, 40);
  out.push_back({"segments and sinks", {2, 4, 2, 4}, {2, 4, 2, 4}, packed});
  AttentionOptions unseen;
  unseen.causal = true;
  out.push_back({"rows that see no key (T > S, causal)", {1, 5, 2, 4}, {1, 3, 2, 4}, unseen});
  return out;
}

// q, k, v (and the sinks, last) from the inputs.
AttentionResult run(const Ts& in, const Variant& variant) {
  AttentionOptions o = variant.options;
  if (o.sinks.defined()) o.sinks = in[3];
  return attention(in[0], in[1], in[2], o);
}

// `value` where lse is finite, 0 on rows that see no key (their lse is -inf and has no derivative).
Tensor finite_rows(const Tensor& lse, const Tensor& value) {
  return where(gt(lse, Tensor::full({}, -1e300, lse.dtype())), value, Tensor::zeros({}, value.dtype()));
}

Ts primals(const Variant& variant, uint64_t stream) {
  Ts in = {draw(variant.q, stream), draw(variant.kv, stream + 1), draw(variant.kv, stream + 2)};
  if (variant.options.sinks.defined()) in.push_back(variant.options.sinks);
  return in;
}

TEST(AttentionHigherOrder, GradientThroughTheJvpAndItsJvpMatchDifferences) {
  for (const Variant& variant : variants()) {
    const Ts x = primals(variant, 10), t = primals(variant, 20);
    const size_t n = x.size();
    Ts inputs = x;
    inputs.insert(inputs.end(), t.begin(), t.end());
    // lse does not depend on v, so neither does its tangent on v or on v's tangent.
    std::vector<bool> lse_depends_on(inputs.size(), true);
    lse_depends_on[2] = lse_depends_on[n + 2] = false;
    // f(x, t) = the tangent of attention's out at x along t: its vjp is reverse over forward.
    check_derivatives(
        variant.name + ": out's tangent",
        [&](const Ts& in) {
          const Ts p(in.begin(), in.begin() + std::ptrdiff_t(n)), v(in.begin() + std::ptrdiff_t(n), in.end());
          return jvp([&](const Ts& y) { return Ts{run(y, variant).out}; }, p, v).tangents[0];
        },
        inputs);
    check_derivatives(
        variant.name + ": lse's tangent",
        [&](const Ts& in) {
          const Ts p(in.begin(), in.begin() + std::ptrdiff_t(n)), v(in.begin() + std::ptrdiff_t(n), in.end());
          const Tensor lse_tangent =
              jvp([&](const Ts& y) { return Ts{run(y, variant).lse}; }, p, v).tangents[0];
          return finite_rows(run(p, variant).lse, lse_tangent);
        },
        inputs, lse_depends_on);
    // A gradient reaching lse itself (first order, through the dense path).
    check_derivatives(
        variant.name + ": lse",
        [&](const Ts& in) {
          const Tensor lse = run(in, variant).lse;
          return finite_rows(lse, lse);
        },
        x);
  }
}

// The scalar L = <W, out>, its gradient at x (leaves made here: the fused first-order path, gated on
// its own) and the gradient's directional derivative by central differences.
struct Scalar {
  const Variant& variant;
  Tensor w;
  Tensor operator()(const Ts& in) const { return sum(mul(w, run(in, variant).out)); }
  Ts gradient_at(const Ts& x) const {
    Ts leaves;
    for (const Tensor& xi : x) leaves.push_back(xi.detach().requires_grad_());
    backward((*this)(leaves));
    Ts grads;
    for (const Tensor& leaf : leaves) grads.push_back(leaf.grad());
    return grads;
  }
  // <u, (g(x + h v) - g(x - h v)) / 2h> with its bound (Richardson and the gradient's rounding).
  testing::Difference gradient_difference(const Ts& x, const Ts& v, const Ts& u) const {
    auto at = [&](double h) {
      auto dot_u = [&](const Ts& g) {
        double s = 0;
        for (size_t i = 0; i < g.size(); ++i) s += testing::dot(u[i], g[i]);
        return s;
      };
      return (dot_u(gradient_at(testing::step(x, v, h))) - dot_u(gradient_at(testing::step(x, v, -h)))) /
             (2 * h);
    };
    const double h = 1e-4, dh = at(h), dh2 = at(h / 2);
    double magnitude = 0;
    const Ts g = gradient_at(x);
    for (size_t i = 0; i < g.size(); ++i) magnitude += testing::abs_dot(u[i], g[i]);
    return {dh2, std::fabs(dh - dh2) + 1e3 * std::numeric_limits<double>::epsilon() * (magnitude + 1) / h};
  }
};

TEST(AttentionHigherOrder, HessianVectorProductsMatchDifferencesOfTheGradient) {
  for (const Variant& variant : variants()) {
    const Ts x = primals(variant, 30), v = primals(variant, 40), u = primals(variant, 50);
    const Scalar f{variant, draw(variant.q, 60)};
    const testing::Difference expected = f.gradient_difference(x, v, u);

    // The jvp of the gradient: backward inside a jvp.
    Ts leaves;
    for (const Tensor& xi : x) leaves.push_back(xi.detach().requires_grad_());
    const JvpResult r = jvp(
        [&](const Ts& p) {
          backward(f(p));
          Ts grads;
          for (const Tensor& leaf : leaves) grads.push_back(leaf.grad());
          return grads;
        },
        leaves, v);
    double hvp = 0;
    for (size_t i = 0; i < u.size(); ++i) hvp += testing::dot(u[i], r.tangents[i]);
    EXPECT_LE(std::fabs(hvp - expected.value), expected.bound)
        << variant.name << ": <u, H v> = " << hvp << " (jvp of the gradient), differences " << expected.value;

    // The gradient of <gradient, u> with create_graph: H u, then <H u, v> (H is symmetric).
    Ts second;
    for (const Tensor& xi : x) second.push_back(xi.detach().requires_grad_());
    backward(f(second), {.create_graph = true});
    Tensor inner;
    for (size_t i = 0; i < second.size(); ++i) {
      const Tensor term = sum(mul(second[i].grad(), u[i]));
      inner = inner.defined() ? add(inner, term) : term;
    }
    for (Tensor& leaf : second) leaf.zero_grad();
    backward(inner);
    double huv = 0;
    for (size_t i = 0; i < second.size(); ++i) huv += testing::dot(second[i].grad(), v[i]);
    EXPECT_LE(std::fabs(huv - expected.value), expected.bound)
        << variant.name << ": <H u, v> = " << huv << " (create_graph), differences " << expected.value;
    for (Tensor& leaf : second)
      leaf.zero_grad();  // the create_graph gradient holds its leaf: break the cycle
  }
}

}  // namespace
}  // namespace dew

namespace dew {
namespace {

// attention_backward and attention_jvp are composites: called on tensors that need a derivative, they
// compute through the dense pieces' ops, attention_backward treating out and lse as inputs of its own
// (attention_jvp's lse only shifts exponents, so it is held fixed here). Their derivatives against
// central differences of the fused kernels (which run under NoGrad).
TEST(AttentionHigherOrder, TheFirstDerivativeOpsDifferentiateAsTheirKernelsDiffer) {
  for (const Variant& variant : variants()) {
    const Ts x = primals(variant, 70);
    const AttentionResult forward = run(x, variant);
    const Tensor dout = draw(variant.q, 75);
    const bool sinks = variant.options.sinks.defined();
    auto options_from = [&](const Ts& in, size_t at) {
      AttentionOptions o = variant.options;
      if (sinks) o.sinks = in[at];
      return o;
    };
    Ts backward_inputs = {dout, x[0], x[1], x[2], forward.out, forward.lse};
    if (sinks) backward_inputs.push_back(x[3]);
    check_derivatives(
        variant.name + ": attention_backward's dq, dk, dv",
        [&](const Ts& in) {
          const AttentionGradients g =
              attention_backward(in[0], in[1], in[2], in[3], {in[4], in[5]}, options_from(in, 6));
          Tensor all = concat({g.dq.reshape({-1}), g.dk.reshape({-1}), g.dv.reshape({-1})}, 0);
          return sinks ? concat({all, g.dsinks}, 0) : all;
        },
        backward_inputs);
    const Ts t = primals(variant, 80);
    Ts jvp_inputs = {x[0], x[1], x[2], t[0], t[1], t[2]};
    if (sinks) jvp_inputs.push_back(x[3]), jvp_inputs.push_back(t[3]);
    check_derivatives(
        variant.name + ": attention_jvp's tangents",
        [&](const Ts& in) {
          const AttentionTangents r = attention_jvp(in[0], in[1], in[2], in[3], in[4], in[5], forward.lse,
                                                    options_from(in, 6), sinks ? in[7] : Tensor());
          return concat({r.out.reshape({-1}), finite_rows(forward.lse, r.lse).reshape({-1})}, 0);
        },
        jvp_inputs);
  }
}

}  // namespace
}  // namespace dew
