// One row's reduction in the compute type Acc: the float64 reference (Acc = double) and the portable
// implementation (Acc = AccumulatorOf<T>) share this loop, so they differ only in their precision.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/kernel_types.h"
#include "ops/reduce/reduce_fn.h"

namespace dew::ops {

// One row's result in the compute type Acc (argmax returns the index as Acc).
template <class Acc, class T>
Acc reduce_row(ReduceFn f, const T* x, int64_t n) {
  switch (f) {
    case ReduceFn::sum:
    case ReduceFn::mean: {
      Acc s = 0;
      for (int64_t i = 0; i < n; ++i) s += widen<Acc>(x[i]);
      return f == ReduceFn::mean ? s / Acc(n) : s;
    }
    case ReduceFn::max:
    case ReduceFn::min:
    case ReduceFn::argmax: {
      Acc best = widen<Acc>(x[0]);
      int64_t at = 0;
      for (int64_t i = 1; i < n; ++i) {
        Acc v = widen<Acc>(x[i]);
        bool better = f == ReduceFn::min ? v < best : v > best;
        if (better || (v != v && best == best)) best = v, at = i;  // NaN wins, as in PyTorch
      }
      return f == ReduceFn::argmax ? Acc(at) : best;
    }
    case ReduceFn::logsumexp: {
      Acc m = -std::numeric_limits<Acc>::infinity();
      for (int64_t i = 0; i < n; ++i) m = std::max(m, widen<Acc>(x[i]));
      if (std::isinf(m)) return m;
      Acc s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(widen<Acc>(x[i]) - m);
      return m + std::log(s);
    }
  }
  return 0;
}

}  // namespace dew::ops
