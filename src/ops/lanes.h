// Reductions over L partial lanes, the one pattern every kernel.h reduces with: L = 1 in portable
// builds, L = 8 in AVX2 builds, where the compiler turns the lanes into one vector register (float
// sums do not vectorize otherwise: that would reassociate them). Included inside a DEW_KERNEL_NS
// namespace (NOTE [kernel namespaces]).
#pragma once

#include <cstdint>
#include <limits>

#ifndef DEW_KERNEL_NS
#error "include lanes.h after defining DEW_KERNEL_NS"
#endif

namespace dew::ops::DEW_KERNEL_NS {

// sum of f(i) for i in [0, n)
template <int L, class Acc, class F>
inline Acc lane_sum(int64_t n, F&& f) {
  Acc part[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) part[l] += f(i + l);
  Acc s = 0;
  for (int l = 0; l < L; ++l) s += part[l];
  for (; i < n; ++i) s += f(i);
  return s;
}

// max of f(i) for i in [0, n); -inf when n = 0
template <int L, class Acc, class F>
inline Acc lane_max(int64_t n, F&& f) {
  Acc part[L];
  for (int l = 0; l < L; ++l) part[l] = -std::numeric_limits<Acc>::infinity();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      const Acc v = f(i + l);
      part[l] = v > part[l] ? v : part[l];
    }
  Acc m = -std::numeric_limits<Acc>::infinity();
  for (int l = 0; l < L; ++l) m = part[l] > m ? part[l] : m;
  for (; i < n; ++i) {
    const Acc v = f(i);
    m = v > m ? v : m;
  }
  return m;
}

template <int L, class Acc>
inline Acc dot(const Acc* a, const Acc* b, int64_t n) {
  return lane_sum<L, Acc>(n, [&](int64_t i) { return a[i] * b[i]; });
}

}  // namespace dew::ops::DEW_KERNEL_NS
