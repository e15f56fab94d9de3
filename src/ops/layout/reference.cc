// layout: the float64 references — plain loops over double, the specification every implementation
// is judged against (docs/gate.md), each output element with the magnitude of its terms.
#include "ops/layout/layout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dew::ops {

std::vector<Truth> Layout::reference(const Args& a) {
  // Each output element by its own multi-index arithmetic: independent of copy_strided and views.
  std::vector<OutputSpec> specs = infer(a);
  std::vector<Truth> truths;
  auto unravel = [](int64_t i, const Shape& s) {
    std::vector<int64_t> at(s.size());
    for (size_t d = s.size(); d-- > 0;) at[d] = i % s[d], i /= s[d];
    return at;
  };
  auto ravel = [](const std::vector<int64_t>& at, const Shape& s) {
    int64_t i = 0;
    for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + at[d];
    return i;
  };
  std::vector<std::vector<double>> xs;
  for (const Tensor& x : a.xs) xs.push_back(x.to_f64_vector());
  for (size_t k = 0; k < specs.size(); ++k) {
    const Shape& s = specs[k].shape;
    std::vector<double> y(static_cast<size_t>(numel_of(s)));
    for (int64_t i = 0; i < int64_t(y.size()); ++i) {  // output elements
      auto at = unravel(i, s);
      double v = 0;
      switch (a.fn) {
        case LayoutFn::concat: {
          const int64_t axis = normalize_axis(a.axis, int64_t(s.size()), "concat");
          size_t t = 0;
          while (at[size_t(axis)] >= a.xs[t].size(axis)) at[size_t(axis)] -= a.xs[t].size(axis), ++t;
          v = xs[t][size_t(ravel(at, a.xs[t].shape()))];
          break;
        }
        case LayoutFn::split: {
          const int64_t axis = normalize_axis(a.axis, int64_t(s.size()), "split");
          for (size_t j = 0; j < k; ++j) at[size_t(axis)] += a.ints[j];
          v = xs[0][size_t(ravel(at, a.xs[0].shape()))];
          break;
        }
        case LayoutFn::pad: {
          bool inside = true;
          for (size_t p = 0; p < a.ints.size() / 2; ++p) {
            size_t d = s.size() - 1 - p;
            at[d] -= a.ints[2 * p];
            inside &= at[d] >= 0 && at[d] < a.xs[0].size(int64_t(d));
          }
          v = inside ? xs[0][size_t(ravel(at, a.xs[0].shape()))] : a.value;
          break;
        }
        case LayoutFn::permute_copy: {
          std::vector<int64_t> src(at.size());
          for (size_t d = 0; d < at.size(); ++d)
            src[size_t(normalize_axis(a.ints[d], int64_t(at.size()), "permute"))] = at[d];
          v = xs[0][size_t(ravel(src, a.xs[0].shape()))];
          break;
        }
        case LayoutFn::tril:
        case LayoutFn::triu: {
          const int64_t r = at[at.size() - 2], c = at.back();
          const bool keep = a.fn == LayoutFn::tril ? c <= r + a.axis : c >= r + a.axis;
          v = keep ? xs[0][size_t(i)] : 0.0;
          break;
        }
        case LayoutFn::fill:
          v = a.value;
          break;
        case LayoutFn::arange:
          v = a.start + double(i) * a.step;
          break;
      }
      y[size_t(i)] = v;
    }
    if (is_floating(specs[k].dtype))
      truths.push_back({Tensor::from_values(y, s, DType::f64), Tensor::zeros(s, DType::f64), 0});
    else
      truths.push_back({Tensor::from_values(y, s, specs[k].dtype), Tensor(), 0});
  }
  return truths;
}

}  // namespace dew::ops
