// layer_norm's row kernels, written once with L partial lanes and compiled per instruction set
// (NOTE [kernel namespaces]). Weight and bias gradients sum fixed blocks of rows in order.
#pragma once

#include <cmath>
#include <vector>

#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/lanes.h"
#include "ops/layer_norm/layer_norm.h"
#include "ops/scratch.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

inline constexpr int64_t kLayerNormBlockRows = 32;

template <int L, class T>
void layer_norm_forward(const LayerNormArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  Tensor xc = a.x.contiguous(), wc = a.weight.defined() ? a.weight.contiguous() : Tensor(),
         bc = a.bias.defined() ? a.bias.contiguous() : Tensor();
  const T* x = xc.data<T>();
  const T* w = wc.defined() ? wc.data<T>() : nullptr;
  const T* b = bc.defined() ? bc.data<T>() : nullptr;
  T* y = outs[0].data<T>();
  Acc* mean_out = outs[1].data<Acc>();
  Acc* rstd_out = outs[2].data<Acc>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * C;
      const Acc mu = lane_sum<L, Acc>(C, [&](int64_t i) { return widen<Acc>(xr[i]); }) / Acc(C);
      const Acc var = lane_sum<L, Acc>(C,
                                       [&](int64_t i) {
                                         const Acc d = widen<Acc>(xr[i]) - mu;
                                         return d * d;
                                       }) /
                      Acc(C);
      const Acc rs = Acc(1) / std::sqrt(var + Acc(a.eps));
      mean_out[r] = mu;
      rstd_out[r] = rs;
      T* yr = y + r * C;
      for (int64_t i = 0; i < C; ++i)
        yr[i] = narrow<T>((widen<Acc>(xr[i]) - mu) * rs * (w ? widen<Acc>(w[i]) : Acc(1)) +
                          (b ? widen<Acc>(b[i]) : Acc(0)));
    }
  });
}

template <int L, class T>
void layer_norm_backward(const LayerNormArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  Tensor dyc = a.dy.contiguous(), xc = a.x.contiguous(), mc = a.mean.contiguous(), rc = a.rstd.contiguous();
  Tensor wc = a.weight.defined() ? a.weight.contiguous() : Tensor();
  const T* dy = dyc.data<T>();
  const T* x = xc.data<T>();
  const T* w = wc.defined() ? wc.data<T>() : nullptr;
  const Acc* mean = mc.data<Acc>();
  const Acc* rstd = rc.data<Acc>();
  T* dx = outs[0].data<T>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  const int64_t blocks = (rows + kLayerNormBlockRows - 1) / kLayerNormBlockRows;
  Scratch<Acc> dw_blocks(w ? blocks * C : 0, Acc(0)), db_blocks(w ? blocks * C : 0, Acc(0));
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      for (int64_t r = blk * kLayerNormBlockRows; r < std::min(rows, (blk + 1) * kLayerNormBlockRows); ++r) {
        const T* xr = x + r * C;
        const T* dyr = dy + r * C;
        const Acc mu = mean[r], rs = rstd[r];
        auto g = [&](int64_t i) { return widen<Acc>(dyr[i]) * (w ? widen<Acc>(w[i]) : Acc(1)); };
        auto xhat = [&](int64_t i) { return (widen<Acc>(xr[i]) - mu) * rs; };
        const Acc mean_g = lane_sum<L, Acc>(C, g) / Acc(C);
        const Acc mean_gx = lane_sum<L, Acc>(C, [&](int64_t i) { return g(i) * xhat(i); }) / Acc(C);
        for (int64_t i = 0; i < C; ++i) dx[r * C + i] = narrow<T>(rs * (g(i) - mean_g - xhat(i) * mean_gx));
        if (w) {
          Acc* dwb = dw_blocks.data() + blk * C;
          Acc* dbb = db_blocks.data() + blk * C;
          for (int64_t i = 0; i < C; ++i) {
            dwb[i] += widen<Acc>(dyr[i]) * xhat(i);
            dbb[i] += widen<Acc>(dyr[i]);
          }
        }
      }
    }
  });
  if (!w) return;
  T* dw = outs[1].data<T>();
  T* db = outs[2].data<T>();
  for (int64_t i = 0; i < C; ++i) {
    Acc sw = 0, sb = 0;
    for (int64_t blk = 0; blk < blocks; ++blk)
      sw += dw_blocks[size_t(blk * C + i)], sb += db_blocks[size_t(blk * C + i)];
    dw[i] = narrow<T>(sw);
    db[i] = narrow<T>(sb);
  }
}

template <int L, class T>
void layer_norm(const LayerNormArgs& a, std::vector<Tensor>& outs) {
  if (a.backward)
    layer_norm_backward<L, T>(a, outs);
  else
    layer_norm_forward<L, T>(a, outs);
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
