// cross_entropy's row kernels, written once and compiled per instruction set (NOTE [kernel
// namespaces]): L partial lanes for the max and the sum, one exp per logit (kept for the gradient),
// and FastExp choosing exp_f32 over libm.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "ops/cross_entropy/cross_entropy.h"
#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/lanes.h"
#include "ops/scratch.h"
#include "ops/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

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
    Scratch<Acc> row_buffer(V);
    Acc* e = row_buffer.data();  // exp(x - max) of the row, kept so that each logit costs one exp
    for (int64_t r = r0; r < r1; ++r) {
      const Acc* xr = row_as<Acc>(x + r * V, V, e);  // bf16 rows are widened into e, then overwritten
      T* dr = dx + r * V;
      const Acc m = row_max<L, Acc>(xr, V);
      // The sum in double: its rounding would scale a whole row of gradients by one shared error, which
      // dominates when one logit dominates (large_logits); the sum costs little next to the exps.
      const double sum =
          lane_sum<L, double>(V, [&](int64_t i) { return double(e[i] = exp_with<FastExp>(xr[i] - m)); });
      const Acc lse = Acc(double(m) + std::log(sum));
      lse_out[r] = R(lse);
      const int64_t target = t[r];
      const bool counted = target != a.ignore_index;
      const Acc scale = counted ? (w ? Acc(w[r]) : Acc(1)) * inv_w : Acc(0);
      if (counted)
        row_loss[size_t(r)] =
            double(scale) * (double(lse) - double(widen<Acc>(x[r * V + target])) + double(z) * lse * lse);
      // d logits = scale (1 + 2 z lse) softmax(x) - scale [i = target], softmax(x) = e / sum
      const Acc p_scale = Acc(double(scale) * (1.0 + 2.0 * double(z) * double(lse)) / sum);
      for (int64_t i = 0; i < V; ++i) dr[i] = narrow<T>(p_scale * e[i]);
      if (counted) dr[target] = narrow<T>(p_scale * e[target] - scale);
    }
  });
  double loss = 0;
  for (double v : row_loss) loss += v;
  outs[0].data<R>()[0] = R(loss);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
