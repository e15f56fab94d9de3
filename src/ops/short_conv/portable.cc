// short_conv, portable: a (b, t) row of C channels at a time, W taps accumulated in f32 or wider, for
// every floating dtype.
#include <dew/runtime.h>

#include "ops/kernel_types.h"
#include "ops/short_conv/short_conv.h"

namespace dew::ops {
namespace {

template <class T>
void short_conv_rows(const ShortConvArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t B = a.x.size(0), T_ = a.x.size(1), C = a.x.size(2), W = a.weight.size(1);
  const Tensor xc = a.x.contiguous(), wc = a.weight.contiguous();
  const Tensor bc = a.bias.defined() ? a.bias.contiguous() : Tensor();
  const Tensor ic = a.initial.defined() ? a.initial.contiguous() : Tensor();
  const T *x = xc.data<T>(), *w = wc.data<T>(), *bias = bc.defined() ? bc.data<T>() : nullptr;
  const T* init = ic.defined() ? ic.data<T>() : nullptr;
  const Tensor sc = a.segments.defined() ? a.segments.contiguous() : Tensor();
  std::vector<std::vector<int64_t>> starts;  // per row, where segment ids are given
  if (sc.defined())
    for (int64_t b = 0; b < B; ++b) starts.push_back(document_start_of(sc.data<int64_t>(), T_, b));
  const std::vector<int64_t> none;
  T* y = out.data<T>();
  parallel_for(B * T_, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, C * W)), [&](int64_t r0, int64_t r1) {
    std::vector<Acc> acc(static_cast<size_t>(C));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / T_, t = r % T_;
      for (int64_t c = 0; c < C; ++c) acc[size_t(c)] = bias ? widen<Acc>(bias[c]) : Acc(0);
      for (int64_t j = 0; j < W; ++j) {
        const int64_t s = t - (W - 1) + j;  // the input's time; before 0, from initial (or zero)
        if (!short_conv_reaches(starts.empty() ? none : starts[size_t(b)], s, t)) continue;
        const T* in = s >= 0 ? x + (b * T_ + s) * C : init ? init + (b * (W - 1) + (W - 1 + s)) * C : nullptr;
        if (!in) continue;
        for (int64_t c = 0; c < C; ++c) acc[size_t(c)] += widen<Acc>(w[c * W + j]) * widen<Acc>(in[c]);
      }
      if (a.activation == Activation::silu)
        for (int64_t c = 0; c < C; ++c) acc[size_t(c)] = short_conv_silu(acc[size_t(c)]);
      for (int64_t c = 0; c < C; ++c) y[r * C + c] = narrow<T>(acc[size_t(c)]);
    }
  });
}

}  // namespace

void add_short_conv_portable(select::Registry<ShortConvArgs>& r) {
  r.add(
      {"portable", {select::on_cpu<ShortConvArgs>()}, [](const ShortConvArgs& a, std::vector<Tensor>& outs) {
         visit_floating(a.dtype(), [&](auto zero) { short_conv_rows<decltype(zero)>(a, outs[0]); });
       }});
}

}  // namespace dew::ops
