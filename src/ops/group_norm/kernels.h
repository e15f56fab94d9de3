// group_norm's and group_norm_backward's kernels, written once with L partial lanes per reduction and
// compiled per instruction set (NOTE [kernel namespaces]): L = 1 in the portable build, kLanes in the
// cpu tiers. One (image, group) row per task, widened once where the dtype is narrower than its sums.
#pragma once

#include <dew/runtime.h>

#include <cmath>

#include "ops/group_norm/group_norm.h"
#include "ops/kernel_types.h"
#include "ops/scratch.h"
#include "simd/isa.h"
#include "simd/lanes.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

template <int L, class T>
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
    Scratch<Acc> widened = widening_buffer<Acc, T>(N);
    for (int64_t r = r0; r < r1; ++r) {
      const Acc* xr = row_as<Acc>(x + r * N, N, widened.data());
      const Acc mu = lane_sum<L, Acc>(N, [&](int64_t i) { return xr[i]; }) / Acc(N);
      const Acc squares = lane_sum<L, Acc>(N, [&](int64_t i) {
        const Acc d = xr[i] - mu;
        return d * d;
      });
      const Acc rs = Acc(1) / std::sqrt(squares / Acc(N) + Acc(a.eps));
      mean_out[r] = mu, rstd_out[r] = rs;
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t channel = (r % G) * Cg + c;
        const Acc wv = w ? widen<Acc>(w[channel]) : Acc(1), bv = b ? widen<Acc>(b[channel]) : Acc(0);
        const Acc* xp = xr + c * positions;
        T* yp = y + r * N + c * positions;
        for (int64_t p = 0; p < positions; ++p) yp[p] = narrow<T>((xp[p] - mu) * rs * wv + bv);
      }
    }
  });
}

template <int L, class T>
void group_norm_backward_rows(const GroupNormBackwardArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const int64_t B = a.x.size(0), C = a.x.size(1), G = a.groups, positions = a.x.numel() / (B * C);
  const int64_t Cg = C / G, N = Cg * positions;
  const Tensor xc = a.x.contiguous(), dyc = a.dy.contiguous();
  const Tensor wc = a.weight.defined() ? a.weight.contiguous() : Tensor();
  const T *x = xc.data<T>(), *dy = dyc.data<T>(), *w = wc.defined() ? wc.data<T>() : nullptr;
  const Tensor mc = a.mean.contiguous(), rc = a.rstd.contiguous();
  const Acc *mean = mc.data<Acc>(), *rstd = rc.data<Acc>();
  T* dx = outs[0].data<T>();
  std::vector<Acc> dw_part(size_t(B * C)), db_part(size_t(B * C));  // (image, channel)
  parallel_for(B * G, std::max<int64_t>(1, 2048 / std::max<int64_t>(1, N)), [&](int64_t r0, int64_t r1) {
    Scratch<Acc> x_buffer = widening_buffer<Acc, T>(N), dy_buffer = widening_buffer<Acc, T>(N);
    for (int64_t r = r0; r < r1; ++r) {
      const Acc *xr = row_as<Acc>(x + r * N, N, x_buffer.data()),
                *dyr = row_as<Acc>(dy + r * N, N, dy_buffer.data());
      const Acc mu = mean[r], rs = rstd[r];
      Acc sum_g = 0, sum_gx = 0;
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t channel = (r % G) * Cg + c;
        const Acc wv = w ? widen<Acc>(w[channel]) : Acc(1);
        const Acc *xp = xr + c * positions, *dp = dyr + c * positions;
        const Acc dyx = lane_sum<L, Acc>(positions, [&](int64_t p) { return dp[p] * ((xp[p] - mu) * rs); });
        const Acc dys = lane_sum<L, Acc>(positions, [&](int64_t p) { return dp[p]; });
        sum_g += dys * wv, sum_gx += dyx * wv;
        const size_t at = size_t((r / G) * C + channel);
        dw_part[at] = dyx, db_part[at] = dys;
      }
      const Acc mg = sum_g / Acc(N), mgx = sum_gx / Acc(N);
      T* dxr = dx + r * N;
      for (int64_t c = 0; c < Cg; ++c) {
        const Acc wv = w ? widen<Acc>(w[(r % G) * Cg + c]) : Acc(1);
        const Acc *xp = xr + c * positions, *dp = dyr + c * positions;
        T* dxp = dxr + c * positions;
        for (int64_t p = 0; p < positions; ++p)
          dxp[p] = narrow<T>(rs * (dp[p] * wv - mg - (xp[p] - mu) * rs * mgx));
      }
    }
  });
  if (!w) return;
  T *dw = outs[1].data<T>(), *db = outs[2].data<T>();
  for (int64_t c = 0; c < C; ++c) {
    Acc sw = 0, sb = 0;
    for (int64_t b = 0; b < B; ++b) sw += dw_part[size_t(b * C + c)], sb += db_part[size_t(b * C + c)];
    dw[c] = narrow<T>(sw), db[c] = narrow<T>(sb);
  }
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
