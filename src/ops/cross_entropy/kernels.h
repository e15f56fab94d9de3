// cross_entropy's row kernels, written once and compiled per instruction set (NOTE [kernel
// namespaces]): L partial lanes for the online max/sum, and FastExp choosing exp_f32 over libm.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "ops/cross_entropy/cross_entropy.h"
#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/lanes.h"
#include "ops/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

// lse of one row: max over L lanes, then sum of exp(x - max) over L lanes.
template <int L, bool FastExp, class Acc, class T>
Acc row_logsumexp(const T* x, int64_t V) {
  const Acc m = row_max<L, Acc>(x, V);
  return m +
         std::log(lane_sum<L, Acc>(V, [&](int64_t i) { return exp_with<FastExp>(widen<Acc>(x[i]) - m); }));
}

template <int L, bool FastExp, class T>
void cross_entropy_rows(const CrossEntropyArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  using R = AccumulatorOf<T>;  // loss and lse dtype: f32, or f64 for f64 logits
  Tensor xc = a.logits.contiguous(), tc = a.targets.contiguous();
  Tensor wc = a.weights.defined() ? a.weights.contiguous() : Tensor();
  const T* x = xc.data<T>();
  const int64_t* t = tc.data<int64_t>();
  const R* w = wc.defined() ? wc.data<R>() : nullptr;
  const int64_t V = a.logits.size(-1), N = a.logits.numel() / std::max<int64_t>(V, 1);
  T* dx = outs[1].data<T>();
  R* lse_out = outs[2].data<R>();
  // The denominator first (cheap): the loss and every gradient row scale by 1 / sum of weights.
  double W = 0;
  for (int64_t i = 0; i < N; ++i)
    if (t[i] != a.ignore_index) W += w ? double(w[i]) : 1.0;
  const Acc inv_w = W > 0 ? Acc(1.0 / W) : Acc(0);
  const Acc z = Acc(a.z_loss);
  std::vector<double> row_loss(size_t(N), 0.0);  // summed in row order below: thread-independent
  parallel_for(N, std::max<int64_t>(1, 65536 / std::max<int64_t>(V, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * V;
      T* dr = dx + r * V;
      const Acc lse = row_logsumexp<L, FastExp, Acc>(xr, V);
      lse_out[r] = R(lse);
      const bool counted = t[r] != a.ignore_index;
      const Acc scale = counted ? (w ? Acc(w[r]) : Acc(1)) * inv_w : Acc(0);
      if (counted)
        row_loss[size_t(r)] =
            double(scale) * (double(lse) - double(widen<Acc>(xr[t[r]])) + double(z) * lse * lse);
      const Acc p_scale = scale * (Acc(1) + Acc(2) * z * lse);
      for (int64_t i = 0; i < V; ++i) dr[i] = narrow<T>(p_scale * exp_with<FastExp>(widen<Acc>(xr[i]) - lse));
      if (counted) dr[t[r]] = narrow<T>(p_scale * exp_with<FastExp>(widen<Acc>(xr[t[r]]) - lse) - scale);
    }
  });
  double loss = 0;
  for (double v : row_loss) loss += v;
  outs[0].data<R>()[0] = R(loss);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
