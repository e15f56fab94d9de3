// layer_norm's vjp through layer_norm_backward (and, for gradients reaching the mean and rstd
// outputs, their own derivatives: 1/C and -rstd^3 (x - mean)/C); its jvp with ops:
// y = xh w + b, xh = (x - m) r: m' = mean(x'), r' = -r^3 mean((x - m)(x' - m')),
// y' = ((x' - m') r + (x - m) r') w + xh w' + b'. layer_norm_backward has no rules yet.
#include "ops/layer_norm/layer_norm.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation LayerNorm::differentiation(std::string_view op) {
  return op == "layer_norm_backward" ? Differentiation::no_rules_yet : Differentiation::rules;
}

std::vector<bool> LayerNorm::vjp_reads_outputs(const Args&) {
  return {false, true, true};
}

VjpRule LayerNorm::vjp(const Args& a) {
  const SavedTensor x(a.x, "layer_norm"), weight(a.weight, "layer_norm");
  const bool has_weight = a.weight.defined(), has_bias = a.bias.defined();
  const double eps = a.eps;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
    const Tensor& xv = x.get();
    const double inv_c = 1.0 / double(xv.size(-1));
    Tensor dx, dw, db;
    if (d[0].defined()) {
      LayerNormArgs b{
          d[0], xv,  has_weight ? weight.get() : Tensor(), Tensor(), outs[1].detach(), outs[2].detach(),
          eps,  true};
      std::vector<Tensor> g = run_op<LayerNorm>(b);
      dx = g[0];
      if (has_weight) dw = g[1], db = g[2];
      if (has_bias && !has_weight) db = sum_to_shape(d[0], {xv.size(-1)});
    }
    const Tensor m = cast(outs[1], xv.dtype()).unsqueeze(-1), r = cast(outs[2], xv.dtype()).unsqueeze(-1);
    if (d[1].defined())  // d mean / d x = 1/C
      dx = add_defined(dx,
                       mul(cast(d[1], xv.dtype()).unsqueeze(-1), scalar_like(inv_c, xv)).expand(xv.shape()));
    if (d[2].defined())  // d rstd / d x = -r^3 (x - m) / C
      dx = add_defined(dx, mul(mul(cast(d[2], xv.dtype()).unsqueeze(-1), mul(square(r), r)),
                               mul(sub(xv, m), scalar_like(-inv_c, xv))));
    std::vector<Tensor> grads{dx};
    if (has_weight) grads.push_back(dw);
    if (has_bias) grads.push_back(db);
    return grads;
  };
}

std::vector<Tensor> LayerNorm::jvp(const Args& a, const std::vector<Tensor>& outs,
                                   const std::vector<Tensor>& t) {
  const Tensor& x = a.x;
  const Tensor m = cast(outs[1], x.dtype()).unsqueeze(-1), r = cast(outs[2], x.dtype()).unsqueeze(-1);
  const Tensor centered = sub(x, m);
  size_t next = 1;
  const Tensor tw = a.weight.defined() ? t[next++] : Tensor();
  const Tensor tb = a.bias.defined() ? t[next++] : Tensor();
  Tensor dy, dm, dr;
  if (t[0].defined()) {
    dm = mean(t[0], {-1}, true);
    const Tensor dc = sub(t[0], dm);
    dr = mul(neg(mul(square(r), r)), mean(mul(centered, dc), {-1}, true));
    dy = add(mul(dc, r), mul(centered, dr));
    if (a.weight.defined()) dy = mul(dy, a.weight);
  }
  if (tw.defined()) dy = add_defined(dy, mul(mul(centered, r), tw));
  if (tb.defined()) dy = add_defined(dy, tb.expand(x.shape()));
  const DType s = outs[1].dtype();
  return {dy, dm.defined() ? cast(dm.squeeze(-1), s) : Tensor(),
          dr.defined() ? cast(dr.squeeze(-1), s) : Tensor()};
}

}  // namespace dew::ops
