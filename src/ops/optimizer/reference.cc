// The optimizer ops' float64 references: each rule's formula over double with the hyper-parameters as
// given (the kernels round the constants once to the dtype; the steps below count those roundings), and
// for each output the magnitudes of its terms (NOTE [certified bound]).
#include <cmath>

#include "ops/optimizer/optimizer.h"

namespace dew::ops {
namespace {

struct Column {
  std::vector<double> value, magnitude;
  explicit Column(size_t n) : value(n), magnitude(n) {}
  Truth truth(const Shape& shape, int64_t steps) const {
    return {Tensor::from_values(value, shape, DType::f64), Tensor::from_values(magnitude, shape, DType::f64),
            steps};
  }
};

std::vector<Truth> adamw(const AdamWStep& s, const std::vector<double>& p, const std::vector<double>& g,
                         const std::vector<double>& m, const std::vector<double>& v, const Shape& shape) {
  const AdamWCoefficients k = adamw_coefficients(s);
  Column P(p.size()), M(p.size()), V(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double mean = m[i] + k.w1 * (g[i] - m[i]), second = v[i] * k.beta2 + k.w2 * g[i] * g[i];
    const double denom = std::sqrt(second) / k.root + k.eps;
    M.value[i] = mean, M.magnitude[i] = std::fabs(m[i]) + k.w1 * (std::fabs(g[i]) + std::fabs(m[i]));
    V.value[i] = second, V.magnitude[i] = second;  // every term positive
    // The quotient's relative error adds to its numerator's (absolute, over M's terms).
    P.value[i] = p[i] * k.decay + k.step_size * (mean / denom);
    P.magnitude[i] = std::fabs(p[i] * k.decay) + std::fabs(k.step_size) * M.magnitude[i] / denom;
  }
  // mean: 3 roundings and w1's; second: 3 and beta2's, w2's; p: mean's, the sqrt, the quotient and
  // the constants root, eps, decay and step_size, and the final product and sum.
  return {P.truth(shape, 16), M.truth(shape, 4), V.truth(shape, 5)};
}

std::vector<Truth> sgd(const SgdStep& s, const std::vector<double>& p, const std::vector<double>& g,
                       const std::vector<double>* buf, const Shape& shape) {
  const SgdCoefficients k = sgd_coefficients(s, buf != nullptr);
  Column P(p.size()), B(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    double d = g[i] + k.weight_decay * p[i], dm = std::fabs(g[i]) + std::fabs(k.weight_decay * p[i]);
    if (buf) {
      const double b = k.first ? d : (*buf)[i] * k.momentum + k.keep * d;
      const double bm = k.first ? dm : std::fabs((*buf)[i] * k.momentum) + k.keep * dm;
      B.value[i] = b, B.magnitude[i] = bm;
      d = k.nesterov ? d + k.momentum * b : b;
      dm = k.nesterov ? dm + k.momentum * bm : bm;
    }
    P.value[i] = p[i] + k.rate * d;
    P.magnitude[i] = std::fabs(p[i]) + std::fabs(k.rate) * dm;
  }
  std::vector<Truth> out{P.truth(shape, 10)};
  if (buf) out.push_back(B.truth(shape, 6));
  return out;
}

std::vector<Truth> lion(const LionStep& s, const std::vector<double>& p, const std::vector<double>& g,
                        const std::vector<double>& m, const Shape& shape) {
  const LionCoefficients k = lion_coefficients(s);
  Column P(p.size()), M(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double c = k.beta1 * m[i] + k.w1 * g[i];
    P.value[i] = p[i] * k.decay - k.rate * double((c > 0) - (c < 0));
    P.magnitude[i] = std::fabs(p[i] * k.decay) + k.rate;
    M.value[i] = k.beta2 * m[i] + k.w2 * g[i];
    M.magnitude[i] = std::fabs(k.beta2 * m[i]) + std::fabs(k.w2 * g[i]);
  }
  return {P.truth(shape, 5), M.truth(shape, 5)};
}

}  // namespace

std::vector<Truth> OptimizerUpdate::reference(const Args& a) {
  const Shape& shape = a.param.shape();
  const std::vector<double> p = a.param.to_f64_vector(), g = a.grad.to_f64_vector();
  std::vector<std::vector<double>> state;
  for (const Tensor& s : a.state) state.push_back(s.to_f64_vector());
  if (const auto* s = std::get_if<AdamWStep>(&a.step)) return adamw(*s, p, g, state[0], state[1], shape);
  if (const auto* s = std::get_if<SgdStep>(&a.step))
    return sgd(*s, p, g, state.empty() ? nullptr : &state[0], shape);
  return lion(std::get<LionStep>(a.step), p, g, state[0], shape);
}

std::vector<Truth> SquaredNorm::reference(const Args& a) {
  const std::vector<double> x = a.x.to_f64_vector();
  double sum = 0;
  for (double e : x) sum += e * e;  // (N) -> ()
  return {{Tensor::from_values({sum}, Shape{}, DType::f64), Tensor::from_values({sum}, Shape{}, DType::f64),
           int64_t(x.size()) + 1}};
}

}  // namespace dew::ops
