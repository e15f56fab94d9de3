// The indexing ops' float64 references: every output element from its multi-index, by hand.
// Copies are exact (magnitude 0); sums carry sum |terms| over as many steps as terms.
#include <cmath>

#include "ops/index/index.h"

namespace dew::ops {
namespace {

// Row-major multi-index of linear position i in shape s.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> at(s.size());
  for (size_t d = s.size(); d-- > 0;) at[d] = i % s[d], i /= s[d];
  return at;
}

int64_t ravel(const std::vector<int64_t>& at, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + at[d];
  return i;
}

}  // namespace

std::vector<Truth> Index::reference(const Args& a) {
  const OutputSpec spec = infer(a)[0];
  const int64_t n = numel_of(spec.shape);
  auto idx = a.index.to_f64_vector();
  auto x = a.x.defined() ? a.x.to_f64_vector() : std::vector<double>();
  std::vector<double> y(static_cast<size_t>(n), 0.0), m(static_cast<size_t>(n), 0.0);
  int64_t steps = 0;
  const int64_t axis = a.x.defined() ? normalize_axis(a.axis, a.x.dim(), "index") : 0;
  switch (a.fn) {
    case IndexFn::embedding:
    case IndexFn::index_select:
      for (int64_t i = 0; i < n; ++i) {  // output elements
        auto at = unravel(i, spec.shape);
        std::vector<int64_t> src = at;
        if (a.fn == IndexFn::embedding) {
          int64_t row =
              int64_t(idx[size_t(ravel(std::vector<int64_t>(at.begin(), at.end() - 1), a.index.shape()))]);
          src = {row, at.back()};
        } else {
          src[size_t(axis)] = int64_t(idx[size_t(at[size_t(axis)])]);
        }
        y[size_t(i)] = x[size_t(ravel(src, a.x.shape()))];
      }
      break;
    case IndexFn::gather:
      for (int64_t i = 0; i < n; ++i) {
        auto at = unravel(i, spec.shape);
        at[size_t(axis)] = int64_t(idx[size_t(i)]);
        y[size_t(i)] = x[size_t(ravel(at, a.x.shape()))];
      }
      break;
    case IndexFn::scatter_add: {
      auto src = a.src.to_f64_vector();
      std::vector<int64_t> hits(static_cast<size_t>(n), 1);
      for (int64_t i = 0; i < n; ++i) y[size_t(i)] = x[size_t(i)], m[size_t(i)] = std::fabs(x[size_t(i)]);
      for (int64_t i = 0; i < a.index.numel(); ++i) {  // index elements
        auto at = unravel(i, a.index.shape());
        at[size_t(axis)] = int64_t(idx[size_t(i)]);
        size_t o = size_t(ravel(at, a.x.shape()));
        y[o] += src[size_t(i)];
        m[o] += std::fabs(src[size_t(i)]);
        steps = std::max(steps, ++hits[o]);
      }
      break;
    }
    case IndexFn::embedding_backward: {
      const int64_t C = a.x.size(-1);
      std::vector<int64_t> hits(static_cast<size_t>(a.count), 0);
      for (int64_t r = 0; r < a.index.numel(); ++r) {  // id positions
        int64_t v = int64_t(idx[size_t(r)]);
        steps = std::max(steps, ++hits[size_t(v)]);
        for (int64_t c = 0; c < C; ++c) {
          y[size_t(v * C + c)] += x[size_t(r * C + c)];
          m[size_t(v * C + c)] += std::fabs(x[size_t(r * C + c)]);
        }
      }
      break;
    }
    case IndexFn::one_hot:
      for (int64_t r = 0; r < a.index.numel(); ++r) y[size_t(r * a.count + int64_t(idx[size_t(r)]))] = 1;
      return {{Tensor::from_values(y, spec.shape, DType::i64), Tensor(), 0}};
  }
  if (!is_floating(spec.dtype)) return {{Tensor::from_values(y, spec.shape, spec.dtype), Tensor(), 0}};
  return {{Tensor::from_values(y, spec.shape, DType::f64), Tensor::from_values(m, spec.shape, DType::f64),
           steps}};
}

}  // namespace dew::ops
