// short_conv is linear in x (with initial), in weight and in bias, so its rules are ops: the vjp sends
// d back through the transposed taps — x's padded time s receives sum_j weight[:,j] d[s - j], the pad
// d shifted by j — gives weight column j as sum over (b,t) of d and the input j steps on, and bias
// sum d; the jvp is short_conv of the tangents, one input at a time. With segment ids, tap j's share of
// each output is masked where its input lies before the output's document (the same mask in both).
// With SiLU fused, both rules take its slope at the sums, recomputed.
#include "ops/rules_common.h"
#include "ops/short_conv/short_conv.h"

namespace dew::ops {
namespace {

// x after the W - 1 inputs before it: (B, W-1+T, C).
Tensor padded_input(const Tensor& x, const Tensor& initial, int64_t W) {
  return initial.defined() ? concat({initial, x}, 1) : pad(x, {0, 0, W - 1, 0});
}

// Each tap's mask (B,T,1) in `dtype`, tap j's 1 where output t's input t - (W-1) + j reaches it
// (short_conv_reaches), 0 where it lies before t's document; none without segments (every tap reaches).
// The rows' document starts are found once for all W taps.
std::vector<Tensor> tap_masks(const Tensor& segments, int64_t W, DType dtype, Device device) {
  if (!segments.defined()) return std::vector<Tensor>(static_cast<size_t>(W));
  const Tensor seg = segments.to(Device::cpu()).contiguous();
  const int64_t B = seg.size(0), T = seg.size(1);
  std::vector<std::vector<double>> m(static_cast<size_t>(W));
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int64_t> start = document_start_of(seg.data<int64_t>(), T, b);
    for (int64_t j = 0; j < W; ++j)
      for (int64_t t = 0; t < T; ++t)
        m[size_t(j)].push_back(short_conv_reaches(start, t - (W - 1) + j, t) ? 1.0 : 0.0);
  }
  std::vector<Tensor> masks;
  for (const std::vector<double>& tap : m)
    masks.push_back(Tensor::from_values(tap, {B, T, 1}, dtype).to(device));
  return masks;
}

// d silu(p) / dp = s + p s (1 - s), s = sigmoid(p), at the pre-activation sums p (recomputed).
Tensor silu_slope(const Tensor& p) {
  const Tensor s = sigmoid(p);
  return add(s, mul(mul(p, s), sub(Tensor::full({}, 1.0, p.dtype(), p.device()), s)));
}

}  // namespace

Differentiation ShortConv::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> ShortConv::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule ShortConv::vjp(const Args& a) {
  const SavedTensor x(a.x, "short_conv"), weight(a.weight, "short_conv"), initial(a.initial, "short_conv"),
      segments(a.segments, "short_conv"), bias(a.bias, "short_conv");
  const bool has_bias = a.bias.defined(), has_initial = a.initial.defined();
  const bool silu = a.activation == Activation::silu;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor &xv = x.get(), &w = weight.get();
    // With SiLU, the gradient reaching the sums: d times the slope at the recomputed sums.
    const Tensor g =
        silu ? mul(d[0], silu_slope(short_conv(xv, w, bias.get(), initial.get(), segments.get()))) : d[0];
    const int64_t T = xv.size(1), C = w.size(0), W = w.size(1);
    const Tensor inputs = padded_input(xv, initial.get(), W);
    Tensor d_inputs;  // (B, W-1+T, C)
    std::vector<Tensor> columns;
    const std::vector<Tensor> masks = tap_masks(segments.get(), W, g.dtype(), g.device());
    for (int64_t j = 0; j < W; ++j) {
      const Tensor tap = w.slice(1, j, j + 1).contiguous().reshape({C});
      const Tensor& mask = masks[size_t(j)];
      const Tensor gj = mask.defined() ? mul(g, mask) : g;  // the outputs tap j reaches
      d_inputs = add_defined(d_inputs, mul(pad(gj, {0, 0, j, W - 1 - j}), tap));
      columns.push_back(sum(mul(gj, inputs.slice(1, j, j + T)), {0, 1}).reshape({C, 1}));
    }
    std::vector<Tensor> grads{d_inputs.slice(1, W - 1, W - 1 + T).contiguous(), concat(columns, 1)};
    if (has_bias) grads.push_back(sum(g, {0, 1}));
    if (has_initial) grads.push_back(d_inputs.slice(1, 0, W - 1).contiguous());
    if (segments.get().defined()) grads.push_back(Tensor());  // integer ids: no gradient
    return grads;
  };
}

std::vector<Tensor> ShortConv::jvp(const Args& a, const std::vector<Tensor>&, const std::vector<Tensor>& t) {
  size_t k = 0;  // t follows inputs(): x, weight, then bias and initial where given
  const Tensor tx = t[k++], tw = t[k++];
  const Tensor tb = a.bias.defined() ? t[k++] : Tensor();
  const Tensor ti = a.initial.defined() ? t[k++] : Tensor();
  Tensor out;
  if (tx.defined() || ti.defined())
    out = short_conv(tx.defined() ? tx : Tensor::zeros(a.x.shape(), a.x.dtype(), a.x.device()), a.weight, {},
                     ti, a.segments);
  if (tw.defined()) out = add_defined(out, short_conv(a.x, tw, {}, a.initial, a.segments));
  if (tb.defined()) out = add_defined(out, add(Tensor::zeros(a.x.shape(), a.x.dtype(), a.x.device()), tb));
  if (a.activation == Activation::silu && out.defined())  // the sums' tangent times SiLU's slope there
    out = mul(out, silu_slope(short_conv(a.x, a.weight, a.bias, a.initial, a.segments)));
  return {out};
}

}  // namespace dew::ops
