// conv2d, portable: direct loops for every floating dtype, accumulating in float (double for f64),
// each output plane or weight slice computed by one task in a fixed order, so results never depend
// on the thread count. The gate's reference arm; oneDNN's kernels are the fast path.
#include <dew/runtime.h>

#include "ops/conv2d/conv2d.h"
#include "ops/kernel_types.h"

namespace dew::ops {
namespace {

// The output columns j whose tap v lands inside the image: j in [lo, hi).
struct Span {
  int64_t lo, hi;
};
Span valid_columns(int64_t out, int64_t stride, int64_t pad, int64_t offset, int64_t size) {
  int64_t lo = 0;
  while (lo < out && lo * stride - pad + offset < 0) ++lo;
  int64_t hi = out;
  while (hi > lo && (hi - 1) * stride - pad + offset >= size) --hi;
  return {lo, hi};
}

template <class T>
void conv2d_forward(const Conv2dArgs& a, const Conv2dGeometry& g, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const Tensor xc = a.x.contiguous(), wc = a.weight.contiguous();
  const Tensor bc = a.bias.defined() ? a.bias.contiguous() : Tensor();
  const T *x = xc.data<T>(), *w = wc.data<T>(), *bias = bc.defined() ? bc.data<T>() : nullptr;
  T* y = out.data<T>();
  parallel_for(g.B * g.O, 1, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> acc(size_t(g.OH * g.OW));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / g.O, o = r % g.O, c0 = (o / g.Og) * g.Cg;
      std::fill(acc.begin(), acc.end(), bias ? widen<Acc>(bias[o]) : Acc(0));
      for (int64_t c = 0; c < g.Cg; ++c)
        for (int64_t u = 0; u < g.kh; ++u)
          for (int64_t v = 0; v < g.kw; ++v) {
            const Acc wv = widen<Acc>(w[((o * g.Cg + c) * g.kh + u) * g.kw + v]);
            const T* plane = x + (b * g.C + c0 + c) * g.H * g.W;
            const Span cols = valid_columns(g.OW, g.sw, g.pw, v * g.dw, g.W);
            for (int64_t i = 0; i < g.OH; ++i) {
              const int64_t h = i * g.sh - g.ph + u * g.dh;
              if (h < 0 || h >= g.H) continue;
              const int64_t at = h * g.W - g.pw + v * g.dw;  // + j stride: the tap's pixel
              Acc* dst = acc.data() + i * g.OW;
              for (int64_t j = cols.lo; j < cols.hi; ++j) dst[j] += widen<Acc>(plane[at + j * g.sw]) * wv;
            }
          }
      T* dst = y + r * g.OH * g.OW;
      for (int64_t e = 0; e < g.OH * g.OW; ++e) dst[e] = narrow<T>(acc[size_t(e)]);
    }
  });
}

// dx: each (b, input channel) plane gathers the taps of its group's output channels.
template <class T>
void conv2d_input_grad(const Conv2dArgs& a, const Conv2dGeometry& g, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const Tensor dyc = a.dy.contiguous(), wc = a.weight.contiguous();
  const T *dy = dyc.data<T>(), *w = wc.data<T>();
  T* dx = out.data<T>();
  parallel_for(g.B * g.C, 1, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> acc(size_t(g.H * g.W));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / g.C, ci = r % g.C, grp = ci / g.Cg, c = ci % g.Cg;
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t o = grp * g.Og; o < (grp + 1) * g.Og; ++o)
        for (int64_t u = 0; u < g.kh; ++u)
          for (int64_t v = 0; v < g.kw; ++v) {
            const Acc wv = widen<Acc>(w[((o * g.Cg + c) * g.kh + u) * g.kw + v]);
            const T* plane = dy + (b * g.O + o) * g.OH * g.OW;
            const Span cols = valid_columns(g.OW, g.sw, g.pw, v * g.dw, g.W);
            for (int64_t i = 0; i < g.OH; ++i) {
              const int64_t h = i * g.sh - g.ph + u * g.dh;
              if (h < 0 || h >= g.H) continue;
              const int64_t at = h * g.W - g.pw + v * g.dw;
              const T* src = plane + i * g.OW;
              for (int64_t j = cols.lo; j < cols.hi; ++j)
                acc[size_t(at + j * g.sw)] += widen<Acc>(src[j]) * wv;
            }
          }
      T* dst = dx + r * g.H * g.W;
      for (int64_t e = 0; e < g.H * g.W; ++e) dst[e] = narrow<T>(acc[size_t(e)]);
    }
  });
}

// dweight: each (output channel, input channel of its group) slice sums over images and positions.
template <class T>
void conv2d_weight_grad(const Conv2dArgs& a, const Conv2dGeometry& g, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const Tensor dyc = a.dy.contiguous(), xc = a.x.contiguous();
  const T *dy = dyc.data<T>(), *x = xc.data<T>();
  T* dw = out.data<T>();
  parallel_for(g.O * g.Cg, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r / g.Cg, c = r % g.Cg, ci = (o / g.Og) * g.Cg + c;
      for (int64_t u = 0; u < g.kh; ++u)
        for (int64_t v = 0; v < g.kw; ++v) {
          const Span cols = valid_columns(g.OW, g.sw, g.pw, v * g.dw, g.W);
          Acc acc = 0;
          for (int64_t b = 0; b < g.B; ++b)
            for (int64_t i = 0; i < g.OH; ++i) {
              const int64_t h = i * g.sh - g.ph + u * g.dh;
              if (h < 0 || h >= g.H) continue;
              const int64_t at = ((b * g.C + ci) * g.H + h) * g.W - g.pw + v * g.dw;
              const T* src = dy + ((b * g.O + o) * g.OH + i) * g.OW;
              for (int64_t j = cols.lo; j < cols.hi; ++j)
                acc += widen<Acc>(src[j]) * widen<Acc>(x[at + j * g.sw]);
            }
          dw[(r * g.kh + u) * g.kw + v] = narrow<T>(acc);
        }
    }
  });
}

}  // namespace

void add_conv2d_portable(select::Registry<Conv2dArgs>& r) {
  r.add({"portable", {select::on_cpu<Conv2dArgs>()}, [](const Conv2dArgs& a, std::vector<Tensor>& outs) {
           const Conv2dGeometry g = conv2d_geometry(a);
           visit_floating(a.dtype(), [&](auto zero) {
             using T = decltype(zero);
             switch (a.pass) {
               case ConvPass::forward:
                 return conv2d_forward<T>(a, g, outs[0]);
               case ConvPass::input_grad:
                 return conv2d_input_grad<T>(a, g, outs[0]);
               case ConvPass::weight_grad:
                 return conv2d_weight_grad<T>(a, g, outs[0]);
             }
           });
         }});
}

}  // namespace dew::ops
