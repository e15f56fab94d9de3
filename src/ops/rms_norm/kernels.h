// rms_norm's row kernels, written once with L partial sums per reduction and built per tier: L = 1 in
// portable.cc, kLanes in cpu.cc (8 for avx2, 16 for avx512, where the compiler turns the L lanes into
// one vector register).
// NOTE [kernel namespaces]: each translation unit defines DEW_KERNEL_NS before including a kernels.h,
// so its instantiations get their own symbols and one tier's body can never stand in for another's;
// NOTE [instruction-set regions] (isa.h) says which instructions each body may use.
#pragma once

#include <cmath>

#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/lanes.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/scratch.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

template <int L, class T, class R>
void rms_norm_forward(const RmsNormArgs& a, Tensor& y_out, Tensor& rstd_out) {
  using Acc = AccumulatorOf<T>;
  Tensor xc = a.x.contiguous();
  const T* x = xc.data<T>();
  T* y = y_out.data<T>();
  R* rstd = rstd_out.data<R>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  const Scratch<Acc> w_values = channel_values<Acc, T>(a.weight, C, Acc(1));
  const Acc* w = w_values.data();
  const Acc eps = Acc(a.eps);
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
    Scratch<Acc> widened = widening_buffer<Acc, T>(C);
    for (int64_t r = r0; r < r1; ++r) {
      const Acc* xr = row_as<Acc>(x + r * C, C, widened.data());
      T* yr = y + r * C;
      const Acc inv =
          Acc(1) / std::sqrt(lane_sum<L, Acc>(C, [&](int64_t i) { return xr[i] * xr[i]; }) / Acc(C) + eps);
      rstd[r] = R(inv);
      for (int64_t i = 0; i < C; ++i) yr[i] = narrow<T>(xr[i] * inv * w[i]);
    }
  });
}

template <int L, class T, class R>
void rms_norm_backward(const RmsNormBackwardArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  Tensor dyc = a.dy.contiguous(), xc = a.x.contiguous(), rc = a.rstd.contiguous();
  const T* dy = dyc.data<T>();
  const T* x = xc.data<T>();
  const R* rstd = rc.data<R>();
  T* dx = outs[0].data<T>();
  const int64_t C = a.x.size(-1), rows = a.x.numel() / std::max<int64_t>(C, 1);
  const Scratch<Acc> w_values = channel_values<Acc, T>(a.weight, C, Acc(1));
  const Acc* w = w_values.data();
  const bool has_w = a.weight.defined();
  const int64_t blocks = (rows + kWeightGradBlockRows - 1) / kWeightGradBlockRows;
  Scratch<Acc> dw_blocks(has_w ? blocks * C : 0, Acc(0));
  Acc* dw_parts = dw_blocks.data();
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    Scratch<Acc> x_widened = widening_buffer<Acc, T>(C), dy_widened = widening_buffer<Acc, T>(C);
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t r = b * kWeightGradBlockRows; r < std::min(rows, (b + 1) * kWeightGradBlockRows); ++r) {
        const Acc* xr = row_as<Acc>(x + r * C, C, x_widened.data());
        const Acc* dyr = row_as<Acc>(dy + r * C, C, dy_widened.data());
        T* dxr = dx + r * C;
        const Acc inv = Acc(rstd[r]);
        // dx = rstd * (dy*w - x * rstd^2 * mean(dy*w*x))
        const Acc k =
            inv * inv * lane_sum<L, Acc>(C, [&](int64_t i) { return dyr[i] * xr[i] * w[i]; }) / Acc(C);
        for (int64_t i = 0; i < C; ++i) dxr[i] = narrow<T>(inv * (dyr[i] * w[i] - xr[i] * k));
        if (has_w) {
          Acc* dwb = dw_parts + b * C;
          for (int64_t i = 0; i < C; ++i) dwb[i] += dyr[i] * xr[i] * inv;
        }
      }
    }
  });
  if (!has_w) return;
  T* dw = outs[1].data<T>();
  for (int64_t i = 0; i < C; ++i) {
    Acc s = 0;
    for (int64_t b = 0; b < blocks; ++b) s += dw_parts[b * C + i];
    dw[i] = narrow<T>(s);
  }
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
