// The tape's behaviour: gradient accumulation, NoGrad, detach, retained and freed graphs, the
// in-place check, gradients of gradients, and the two modes composed (MeanFlow's gradient through a
// jvp; a Hessian-vector product as the jvp of a gradient).
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <functional>

#include "check_derivatives.h"
#include "error_of.h"

namespace dew {
namespace {

using testing::draw;
using testing::error_of;

Tensor c(double v) {
  return Tensor::full({}, v, DType::f64);
}

std::vector<double> values(const Tensor& t) {
  return t.to_f64_vector();
}

TEST(Backward, GradientOfSumOfSquaresIsTwiceX) {
  Tensor x = Tensor::from_values({1.5, -2.0, 3.0}, {3}, DType::f64).requires_grad_();
  backward(sum(mul(x, x)));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3.0, -4.0, 6.0}));
}

TEST(Backward, TwoBackwardsAccumulate) {
  Tensor x = Tensor::from_values({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  backward(sum(mul(x, c(3))));
  backward(sum(mul(x, c(3))));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6.0, 6.0}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Backward, NoGradAndDetachStopRecording) {
  Tensor x = Tensor::from_values({1.0, 2.0}, {2}, DType::f64).requires_grad_();
  {
    NoGrad no_grad;
    EXPECT_FALSE(exp(x).requires_grad());
  }
  EXPECT_TRUE(exp(x).requires_grad());
  EXPECT_FALSE(exp(x.detach()).requires_grad());
  // y = x * stop_gradient(x): dy/dx = x, not 2x
  backward(sum(mul(x, x.detach())));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1.0, 2.0}));
}

TEST(Backward, RefusesANonScalarWithoutCotangents) {
  Tensor x = draw({3}, 1).requires_grad_();
  EXPECT_NE(error_of([&] { backward(exp(x)); }).find("[backward] the loss is f64[3]"), std::string::npos);
  EXPECT_NE(error_of([&] { backward(sum(x.detach())); }).find("does not require a gradient"),
            std::string::npos);
}

TEST(Backward, AFreedGraphRefusesASecondRunUnlessRetained) {
  Tensor x = draw({3}, 2).requires_grad_();
  Tensor loss = sum(exp(x));
  backward(loss, {.retain_graph = true});
  backward(loss);
  EXPECT_EQ(values(x.grad()), values(mul(exp(x.detach()), c(2))));
  const std::string e = error_of([&] { backward(loss); });
  EXPECT_NE(e.find("already run and freed"), std::string::npos) << e;
  EXPECT_NE(e.find("sum"), std::string::npos) << e;
}

TEST(Backward, WritingIntoASavedTensorIsRefusedNamingTheOp) {
  Tensor x = draw({3}, 3).requires_grad_();
  Tensor y = exp(x);  // exp's vjp reads y
  Tensor loss = sum(y);
  y.fill(0);  // in place, after exp saved it
  const std::string e = error_of([&] { backward(loss); });
  EXPECT_NE(e.find("[exp]"), std::string::npos) << e;
  EXPECT_NE(e.find("modified in place"), std::string::npos) << e;
}

TEST(Backward, CreateGraphGivesSecondDerivatives) {
  // f = sum(x^3): f' = 3x^2, f'' along ones = 6x
  Tensor x = Tensor::from_values({0.5, -1.5, 2.0}, {3}, DType::f64).requires_grad_();
  backward(sum(mul(square(x), x)), {.create_graph = true});
  Tensor g = x.grad();
  EXPECT_TRUE(g.requires_grad());
  x.zero_grad();
  backward(sum(g));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3.0, -9.0, 12.0}));
}

// MeanFlow's shape: a loss made from a jvp's tangent, differentiated with respect to parameters.
// L(w) = sum(t) with (y, t) = jvp(x -> tanh(w x), x, v); checked against central differences of L.
TEST(Compose, GradientThroughAJvpMatchesCentralDifferences) {
  const Tensor x0 = draw({4}, 5), v = draw({4}, 6), w0 = draw({4}, 7);
  auto loss_of = [&](const Tensor& w) {
    const JvpResult r =
        jvp([&](const std::vector<Tensor>& p) { return std::vector<Tensor>{tanh(mul(w, p[0]))}; }, {x0}, {v});
    return sum(mul(r.tangents[0], r.outputs[0]));
  };
  Tensor w = w0.detach().requires_grad_();
  backward(loss_of(w));
  const Tensor direction = draw({4}, 8);
  const testing::Difference fd = testing::central_difference(
      [&](const std::vector<Tensor>& in) { return loss_of(in[0]); }, {w0}, {direction}, c(1));
  EXPECT_LE(std::fabs(testing::dot(w.grad(), direction) - fd.value), fd.bound)
      << "<grad, v> = " << testing::dot(w.grad(), direction) << ", central difference " << fd.value;
}

// Forward over forward (NOTE [nested jvp levels]): f(x, t) = the tangent of tanh(x^2 w) at x along t,
// differentiated by an outer jvp (and by backward) against central differences; a value the inner f
// computes from an outer dual it closes over (w) keeps its outer tangent.
TEST(Compose, JvpOfAJvpMatchesCentralDifferences) {
  const Tensor w = draw({3}, 9);
  for (const std::string& failure :
       testing::derivative_failures("jvp of jvp",
                                    [&](const std::vector<Tensor>& in) {
                                      return jvp(
                                                 [&](const std::vector<Tensor>& y) {
                                                   return std::vector<Tensor>{tanh(mul(square(y[0]), in[2]))};
                                                 },
                                                 {in[0]}, {in[1]})
                                          .tangents[0];
                                    },
                                    {draw({3}, 1), draw({3}, 2), w}))
    ADD_FAILURE() << failure;
}

// Nothing outlives its last handle: a jvp computed while recording (its tangents hold graphs that reach
// back to their tensors until the level closes) and a gradient through it leave no tensor bytes behind.
TEST(Compose, TapesAndTangentsAreFreedWithTheirTensors) {
  const int64_t before = cpu_memory_stats().bytes_in_use;
  {
    Tensor w = draw({64}, 60).requires_grad_();
    const JvpResult r =
        jvp([&](const std::vector<Tensor>& p) { return std::vector<Tensor>{exp(mul(w, p[0]))}; },
            {draw({64}, 61)}, {draw({64}, 62)});
    backward(sum(mul(r.tangents[0], r.outputs[0])));
    EXPECT_TRUE(w.grad().defined());
    // The same jvp, recorded but never run backward: only closing the level frees its tangents.
    jvp([&](const std::vector<Tensor>& p) { return std::vector<Tensor>{exp(mul(w, p[0]))}; },
        {draw({64}, 63)}, {draw({64}, 64)});
  }
  EXPECT_EQ(cpu_memory_stats().bytes_in_use, before);
}

// Hessian-vector products of a few scalar functions, as the jvp of their gradient, against central
// differences of the gradient: <u, H v> vs <u, (g(x + h v) - g(x - h v)) / 2h>, bound from the step.
TEST(Compose, HessianVectorProductsMatchDifferencesOfTheGradient) {
  using Scalar = std::function<Tensor(const Tensor&)>;
  const Tensor w = draw({4, 6}, 50), m = draw({6, 5}, 51);
  const std::vector<std::pair<std::string, Scalar>> functions = {
      {"sum(w tanh(x))", [&](const Tensor& x) { return sum(mul(w, tanh(x))); }},
      {"sum(w softmax(x))", [&](const Tensor& x) { return sum(mul(w, softmax(x, -1))); }},
      {"sum(logsumexp(x) ^ 2)", [&](const Tensor& x) { return sum(square(logsumexp(x, {1}))); }},
      {"sum(silu(x m))", [&](const Tensor& x) { return sum(silu(matmul(x, m))); }},
      {"sum(sigmoid(x) / (1 + x^2))",
       [&](const Tensor& x) { return sum(div(sigmoid(x), add(c(1), square(x)))); }},
      // Through the fused GLUs: the jvp of a gradient runs their backward ops' own rules.
      {"sum(w swiglu(x, tanh(x)))", [&](const Tensor& x) { return sum(mul(w, swiglu(x, tanh(x)))); }},
      {"sum(w geglu(x, w x))", [&](const Tensor& x) { return sum(mul(w, geglu(x, mul(w, x)))); }},
      {"sum(w geglu_tanh(x, x))", [&](const Tensor& x) { return sum(mul(w, geglu(x, x, true))); }},
      // Through rms_norm: rms_norm_backward's rules, and the path through its saved rstd.
      {"sum(w rms_norm(x, w[0]))",
       [&](const Tensor& x) { return sum(mul(w, rms_norm(x, w.select(0, 0), 1e-5))); }},
      {"sum(rms_norm(x)^2 x)",
       [&](const Tensor& x) { return sum(mul(square(rms_norm(x, Tensor(), 1e-5)), x)); }},
      // Through layer_norm: layer_norm_backward's rules, and the paths through its saved mean and rstd.
      {"sum(w layer_norm(x, w[0], w[1]))",
       [&](const Tensor& x) { return sum(mul(w, layer_norm(x, w.select(0, 0), w.select(0, 1), 1e-5).y)); }},
      {"sum(layer_norm(x)^2 x)",
       [&](const Tensor& x) { return sum(mul(square(layer_norm(x, Tensor(), Tensor(), 1e-5).y), x)); }},
  };
  const Tensor x0 = draw({4, 6}, 52), v = draw({4, 6}, 53), u = draw({4, 6}, 54);
  for (const auto& entry : functions) {
    const std::string& name = entry.first;  // (clang 14 cannot capture structured bindings)
    const Scalar& f = entry.second;
    auto gradient_at = [&](const Tensor& x) {
      Tensor leaf = x.detach().requires_grad_();
      backward(f(leaf));
      return leaf.grad();
    };
    Tensor leaf = x0.detach().requires_grad_();
    const JvpResult r = jvp(
        [&](const std::vector<Tensor>& p) {
          backward(f(p[0]));
          return std::vector<Tensor>{leaf.grad()};
        },
        {leaf}, {v});
    const double hvp = testing::dot(u, r.tangents[0]);
    auto difference = [&](double h) {
      const Tensor hv = mul(v, c(h));
      return (testing::dot(u, gradient_at(add(x0, hv))) - testing::dot(u, gradient_at(sub(x0, hv)))) /
             (2 * h);
    };
    const double h = 1e-4, dh = difference(h), dh2 = difference(h / 2);
    const double bound = std::fabs(dh - dh2) + 16 * std::numeric_limits<double>::epsilon() *
                                                   (testing::abs_dot(u, gradient_at(x0)) + 1) / h;
    EXPECT_LE(std::fabs(hvp - dh2), bound) << name << ": <u, Hv> = " << hvp << ", differences " << dh2;
  }
}

}  // namespace
}  // namespace dew

namespace dew {
namespace {

// grad(): gradients returned, leaves' grad() untouched, computed inputs allowed (the path through one
// input to another counted), and the graph beyond the inputs neither run nor freed.
TEST(Grad, ReturnsGradientsWithRespectToAnyInputsAndLeavesTheRestAlone) {
  Tensor x = Tensor::from_values({0.5, -1.5, 2.0}, {3}, DType::f64).requires_grad_();
  Tensor y = mul(x, x);          // computed input: dL/dy = 3 y^2 ... below
  Tensor loss = sum(mul(y, y));  // L = sum(x^4)
  const std::vector<Tensor> g =
      grad({loss}, {y, x}, {Tensor::full({}, 1.0, DType::f64)}, {.retain_graph = true});
  EXPECT_EQ(values(g[0]), (std::vector<double>{0.5, 4.5, 8.0}));     // 2 y
  EXPECT_EQ(values(g[1]), (std::vector<double>{0.5, -13.5, 32.0}));  // 4 x^3, through y
  EXPECT_FALSE(x.grad().defined());
  // Stopping at y runs nothing behind it: x's part of the graph can still run, once.
  const std::vector<Tensor> only_y = grad({loss}, {y}, {Tensor::full({}, 1.0, DType::f64)});
  EXPECT_EQ(values(only_y[0]), (std::vector<double>{0.5, 4.5, 8.0}));
  backward(sum(y));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1.0, -3.0, 4.0}));
  // An input nothing depends on gets nothing; a tensor that needs no gradient is refused.
  Tensor z = Tensor::from_values({1.0}, {1}, DType::f64).requires_grad_();
  EXPECT_FALSE(grad({sum(mul(x, x))}, {z}, {Tensor::full({}, 1.0, DType::f64)})[0].defined());
  const std::string e = error_of(
      [&] { grad({sum(mul(x, x))}, {Tensor::zeros({1}, DType::f64)}, {Tensor::full({}, 1.0, DType::f64)}); });
  EXPECT_NE(e.find("[grad] input 0"), std::string::npos) << e;
}

// With create_graph the gradient is itself differentiable: d/dx sum(grad) for L = sum(x^3) is 6x.
TEST(Grad, CreateGraphGivesADifferentiableGradient) {
  Tensor x = Tensor::from_values({0.5, -1.5, 2.0}, {3}, DType::f64).requires_grad_();
  const Tensor g =
      grad({sum(mul(square(x), x))}, {x}, {Tensor::full({}, 1.0, DType::f64)}, {.create_graph = true})[0];
  EXPECT_EQ(values(g), (std::vector<double>{0.75, 6.75, 12.0}));
  const Tensor h = grad({sum(g)}, {x}, {Tensor::full({}, 1.0, DType::f64)})[0];
  EXPECT_EQ(values(h), (std::vector<double>{3.0, -9.0, 12.0}));
  EXPECT_FALSE(x.grad().defined());
}

}  // namespace
}  // namespace dew
