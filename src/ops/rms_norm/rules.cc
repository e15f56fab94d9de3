// rms_norm's vjp through rms_norm_backward (the fused backward op), and its jvp with ops:
// y = x r w, r = (mean(x^2) + eps)^(-1/2): r' = -r^3 mean(x x'), y' = (x' r + x r') w + x r w'.
// rms_norm_backward's own rules are not written yet (it refuses a derivative).
#include "ops/rms_norm/rms_norm.h"
#include "ops/rules_common.h"

namespace dew::ops {

Differentiation RmsNorm::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> RmsNorm::vjp_reads_outputs(const Args&) {
  return {false, true};
}

VjpRule RmsNorm::vjp(const Args& a) {
  const SavedTensor x(a.x, "rms_norm"), weight(a.weight, "rms_norm");
  const bool weighted = a.weight.defined();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
    const Tensor& xv = x.get();
    const Tensor r = outs[1];
    Tensor dx, dw;
    if (d[0].defined()) {
      RmsNormBackwardArgs b{d[0], xv, weighted ? weight.get() : Tensor(), r.detach()};
      std::vector<Tensor> g = run_op<RmsNormBackward>(b);
      dx = g[0];
      if (weighted) dw = g[1];
    }
    if (d[1].defined()) {  // through rstd itself: d r / d x = -r^3 x / C
      const Tensor rx = cast(r, xv.dtype()).unsqueeze(-1);
      const Tensor coef = mul(cast(d[1], xv.dtype()).unsqueeze(-1), mul(square(rx), rx));
      dx = add_defined(dx, mul(mul(coef, xv), scalar_like(-1.0 / double(xv.size(-1)), xv)));
    }
    if (weighted) return {dx, dw};
    return {dx};
  };
}

std::vector<Tensor> RmsNorm::jvp(const Args& a, const std::vector<Tensor>& outs,
                                 const std::vector<Tensor>& t) {
  const Tensor r = cast(outs[1], a.x.dtype()).unsqueeze(-1);
  const Tensor& x = a.x;
  Tensor dy, dr;
  if (t[0].defined()) {
    dr = mul(neg(mul(square(r), r)), mean(mul(x, t[0]), {-1}, true));  // (..., 1)
    dy = add(mul(t[0], r), mul(x, dr));
    if (a.weight.defined()) dy = mul(dy, a.weight);
  }
  if (a.weight.defined() && t[1].defined()) dy = add_defined(dy, mul(mul(x, r), t[1]));
  return {dy, dr.defined() ? cast(dr.squeeze(-1), outs[1].dtype()) : Tensor()};
}

}  // namespace dew::ops
