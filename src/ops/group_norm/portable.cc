// group_norm, portable: every floating dtype, one (image, group) row per task — two passes in float
// (double for f64) for mean and variance, then each channel's weight and bias in the same pass that
// writes y. Rows are independent, so results never depend on the thread count.
#include <dew/runtime.h>

#include <cmath>

#include "ops/group_norm/group_norm.h"
#include "ops/kernel_types.h"

namespace dew::ops {
namespace {

template <class T>
void group_norm_rows(const GroupNormArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const int64_t B = a.x.size(0), C = a.x.size(1), G = a.groups, positions = a.x.numel() / (B * C);
  const int64_t Cg = C / G, N = Cg * positions;
  const Tensor xc = a.x.contiguous();
  const Tensor wc = a.weight.defined() ? a.weight.contiguous() : Tensor();
  const Tensor bc = a.bias.defined() ? a.bias.contiguous() : Tensor();
  const T *x = xc.data<T>(), *w = wc.defined() ? wc.data<T>() : nullptr,
          *b = bc.defined() ? bc.data<T>() : nullptr;
  T* y = outs[0].data<T>();
  Acc *mean_out = outs[1].data<Acc>(), *rstd_out = outs[2].data<Acc>();
  parallel_for(B * G, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, N)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * N;
      Acc sum = 0;
      for (int64_t i = 0; i < N; ++i) sum += widen<Acc>(xr[i]);
      const Acc mu = sum / Acc(N);
      Acc squares = 0;
      for (int64_t i = 0; i < N; ++i) {
        const Acc d = widen<Acc>(xr[i]) - mu;
        squares += d * d;
      }
      const Acc rs = Acc(1) / std::sqrt(squares / Acc(N) + Acc(a.eps));
      mean_out[r] = mu, rstd_out[r] = rs;
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t channel = (r % G) * Cg + c;
        const Acc wv = w ? widen<Acc>(w[channel]) : Acc(1), bv = b ? widen<Acc>(b[channel]) : Acc(0);
        const T* xp = xr + c * positions;
        T* yp = y + r * N + c * positions;
        for (int64_t p = 0; p < positions; ++p) yp[p] = narrow<T>((widen<Acc>(xp[p]) - mu) * rs * wv + bv);
      }
    }
  });
}

}  // namespace

void add_group_norm_portable(select::Registry<GroupNormArgs>& r) {
  r.add(
      {"portable", {select::on_cpu<GroupNormArgs>()}, [](const GroupNormArgs& a, std::vector<Tensor>& outs) {
         visit_floating(a.dtype(), [&](auto zero) { group_norm_rows<decltype(zero)>(a, outs); });
       }});
}

}  // namespace dew::ops
