// Checks of derivatives in float64 against an independent computation: central differences of the
// function itself. The bound is derived from the step: D(h) and D(h/2) differ by about 3/4 of D(h)'s
// truncation error (Richardson), and the rounding of the function values costs eps * S / h, where S is
// the sum of the magnitudes of the terms the scalar is made of.
#pragma once

#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace dew::testing {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Normal draws kept away from zero (|x| >= 0.1), f64, a fresh stream per call.
inline Tensor draw(const Shape& shape, uint64_t stream, double scale = 1.0) {
  Tensor t = Tensor::empty(shape, DType::f64);
  fill_normal(t, {20261130, stream, 0}, 0.0, 1.0);
  std::vector<double> v = t.to_f64_vector();
  for (double& x : v) x = scale * std::copysign(0.1 + std::fabs(x), x);
  return Tensor::from_values(v, shape, DType::f64);
}

inline double dot(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_f64_vector(), y = b.to_f64_vector();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

inline double abs_dot(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_f64_vector(), y = b.to_f64_vector();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += std::fabs(x[i] * y[i]);
  return s;
}

// x + h v for each input.
inline std::vector<Tensor> step(const std::vector<Tensor>& xs, const std::vector<Tensor>& vs, double h) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i)
    out.push_back(add(xs[i], mul(vs[i], Tensor::full({}, h, DType::f64))));
  return out;
}

// <w, f(x)> directional derivative along v by central differences, with its error bound.
struct Difference {
  double value, bound;
};
inline Difference central_difference(const Fn& f, const std::vector<Tensor>& xs,
                                     const std::vector<Tensor>& vs, const Tensor& w) {
  NoGrad no_grad;
  const double h = 1e-3, eps = std::numeric_limits<double>::epsilon();
  auto d = [&](double s) {
    const Tensor plus = f(step(xs, vs, s)), minus = f(step(xs, vs, -s));
    return (dot(w, plus) - dot(w, minus)) / (2 * s);
  };
  const double dh = d(h), dh2 = d(h / 2);
  const double magnitude = abs_dot(w, f(xs));
  return {dh2, std::fabs(dh - dh2) + 16 * eps * (magnitude + 1) / h};
}

// f's vjp (through backward) and its jvp (through jvp) against central differences, and the two
// against each other by <jvp(v), w> = <v, vjp(w)>. Every input is an f64 leaf that requires a gradient.
// forward_mode = false checks the vjp only (for ops whose jvp is not written yet).
inline void check_derivatives(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs,
                              bool forward_mode = true) {
  std::vector<Tensor> xs, vs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(inputs[i].detach().requires_grad_());
    vs.push_back(draw(inputs[i].shape(), 1000 + i));
  }
  const Tensor y = f(xs);
  const Tensor w = draw(y.shape(), 999);
  backward({y}, {w});
  double vjp_dot_v = 0, vjp_magnitude = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_TRUE(xs[i].grad().defined()) << what << ": input " << i << " got no gradient";
    ASSERT_EQ(xs[i].grad().shape(), xs[i].shape()) << what << ": gradient " << i << " has the wrong shape";
    vjp_dot_v += dot(xs[i].grad(), vs[i]);
    vjp_magnitude += abs_dot(xs[i].grad(), vs[i]);
  }
  const Difference fd = central_difference(f, xs, vs, w);
  EXPECT_LE(std::fabs(vjp_dot_v - fd.value), fd.bound)
      << what << ": <vjp(w), v> = " << vjp_dot_v << ", central difference " << fd.value;
  if (!forward_mode) return;

  std::vector<Tensor> primals;
  for (const Tensor& x : xs) primals.push_back(x.detach());
  const JvpResult j =
      jvp([&](const std::vector<Tensor>& p) { return std::vector<Tensor>{f(p)}; }, primals, vs);
  ASSERT_EQ(j.tangents[0].shape(), y.shape()) << what << ": tangent shape";
  const double jvp_dot_w = dot(j.tangents[0], w);
  EXPECT_LE(std::fabs(jvp_dot_w - fd.value), fd.bound)
      << what << ": <jvp(v), w> = " << jvp_dot_w << ", central difference " << fd.value;
  // Both sides are sums of products computed in f64: their difference is roundoff, a few hundred eps
  // of the magnitudes summed (n is at most a few hundred here).
  const double roundoff =
      512 * std::numeric_limits<double>::epsilon() * (vjp_magnitude + abs_dot(j.tangents[0], w));
  EXPECT_LE(std::fabs(jvp_dot_w - vjp_dot_v), roundoff)
      << what << ": <jvp(v), w> = " << jvp_dot_w << " but <v, vjp(w)> = " << vjp_dot_v;
}

}  // namespace dew::testing
