// Checks of derivatives in float64 against an independent computation: central differences of the
// function itself. The bound is derived from the step: D(h) and D(h/2) differ by about 3/4 of D(h)'s
// truncation error (Richardson), and the rounding of the function values costs 2 gamma_n S / h, where
// S sums the magnitudes of the terms the scalar is made of and n counts the elements involved (a
// bound on the length of any sum inside: a 10^5-long row sum rounds far above one eps).
#pragma once

#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace dew::testing {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Normal draws kept away from zero (|x| >= 0.1), f64.
inline Tensor draw(const Shape& shape, uint64_t stream, double scale = 1.0, uint64_t seed = 20261130) {
  Tensor t = Tensor::empty(shape, DType::f64);
  fill_normal(t, {seed, stream, 0}, 0.0, 1.0);
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

// x + h v for each input (inputs without a direction stay).
inline std::vector<Tensor> step(const std::vector<Tensor>& xs, const std::vector<Tensor>& vs, double h) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i)
    out.push_back(vs[i].defined() ? add(xs[i], mul(vs[i], Tensor::full({}, h, DType::f64))) : xs[i]);
  return out;
}

// <w, f(x)> directional derivative along v by central differences, with its error bound.
struct Difference {
  double value, bound;
};
inline Difference central_difference(const Fn& f, const std::vector<Tensor>& xs,
                                     const std::vector<Tensor>& vs, const Tensor& w) {
  NoGrad no_grad;
  const double h = 1e-4, eps = std::numeric_limits<double>::epsilon();
  auto d = [&](double s) {
    const Tensor plus = f(step(xs, vs, s)), minus = f(step(xs, vs, -s));
    return (dot(w, plus) - dot(w, minus)) / (2 * s);
  };
  const double dh = d(h), dh2 = d(h / 2);
  double n = double(w.numel());
  for (const Tensor& x : xs) n += double(x.numel());
  const double gamma = n * eps / (1 - n * eps);
  const double magnitude = abs_dot(w, f(xs));
  return {dh2, std::fabs(dh - dh2) + 2 * gamma * (magnitude + 1) / (h / 2)};
}

// f's vjp (through backward) and, with forward_mode, its jvp (through jvp) against central differences,
// and the two against each other by <jvp(v), w> = <v, vjp(w)>. The inputs marked differentiable become
// f64 leaves that require a gradient; the others stay constants. Returns the failures (empty: passed).
// With differences = false, only the vjp and the jvp are compared (for ops with kinks that random
// draws can straddle within a step, such as maximum of two independent draws).
inline std::vector<std::string> derivative_failures(const std::string& what, const Fn& f,
                                                    const std::vector<Tensor>& inputs,
                                                    std::vector<bool> differentiable = {},
                                                    bool forward_mode = true, uint64_t seed = 20261130,
                                                    bool differences = true) {
  if (differentiable.empty()) differentiable.assign(inputs.size(), true);
  std::vector<std::string> failures;
  std::vector<Tensor> xs, vs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor x = inputs[i].detach();
    if (differentiable[i]) x.requires_grad_();
    xs.push_back(x);
    vs.push_back(differentiable[i] ? draw(inputs[i].shape(), 1000 + i, 1.0, seed) : Tensor());
  }
  const Tensor y = f(xs);
  const Tensor w = draw(y.shape(), 999, 1.0, seed);
  backward({y}, {w});
  double vjp_dot_v = 0, vjp_magnitude = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!differentiable[i]) continue;
    if (!xs[i].grad().defined()) {
      failures.push_back(what + ": input " + std::to_string(i) + " got no gradient");
      continue;
    }
    if (xs[i].grad().shape() != xs[i].shape()) {
      failures.push_back(what + ": gradient " + std::to_string(i) + " has the wrong shape");
      continue;
    }
    vjp_dot_v += dot(xs[i].grad(), vs[i]);
    vjp_magnitude += abs_dot(xs[i].grad(), vs[i]);
  }
  const Difference fd = differences ? central_difference(f, xs, vs, w) : Difference{0, 0};
  if (differences && !(std::fabs(vjp_dot_v - fd.value) <= fd.bound))
    failures.push_back(what + ": <vjp(w), v> = " + std::to_string(vjp_dot_v) + ", central difference " +
                       std::to_string(fd.value) + " (bound " + std::to_string(fd.bound) + ")");
  if (!forward_mode) return failures;  // (without differences there is nothing left to compare)

  std::vector<Tensor> primals, tangents;
  std::vector<size_t> moved;
  for (size_t i = 0; i < xs.size(); ++i)
    if (differentiable[i]) primals.push_back(xs[i].detach()), tangents.push_back(vs[i]), moved.push_back(i);
  const JvpResult j = jvp(
      [&](const std::vector<Tensor>& p) {
        std::vector<Tensor> all = xs;
        for (size_t k = 0; k < moved.size(); ++k) all[moved[k]] = p[k];
        for (size_t i = 0; i < all.size(); ++i)
          if (!differentiable[i]) all[i] = all[i].detach();
        return std::vector<Tensor>{f(all)};
      },
      primals, tangents);
  if (j.tangents[0].shape() != y.shape()) {
    failures.push_back(what + ": the tangent has the wrong shape");
    return failures;
  }
  const double jvp_dot_w = dot(j.tangents[0], w);
  if (differences && !(std::fabs(jvp_dot_w - fd.value) <= fd.bound))
    failures.push_back(what + ": <jvp(v), w> = " + std::to_string(jvp_dot_w) + ", central difference " +
                       std::to_string(fd.value));
  // Both sides are exact in exact arithmetic; in f64 each is a chain of sums over the elements
  // involved, so their difference is held to 2 gamma_n of the magnitudes (n counted as for the
  // differences above).
  double n = double(w.numel());
  for (const Tensor& x : xs) n += double(x.numel());
  const double gamma =
      n * std::numeric_limits<double>::epsilon() / (1 - n * std::numeric_limits<double>::epsilon());
  const double roundoff = 2 * gamma * (vjp_magnitude + abs_dot(j.tangents[0], w));
  if (!(std::fabs(jvp_dot_w - vjp_dot_v) <= roundoff))
    failures.push_back(what + ": <jvp(v), w> = " + std::to_string(jvp_dot_w) +
                       " but <v, vjp(w)> = " + std::to_string(vjp_dot_v));
  return failures;
}

}  // namespace dew::testing
