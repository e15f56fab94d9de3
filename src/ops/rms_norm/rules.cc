// rms_norm's vjp through rms_norm_backward (the fused backward op), and its jvp with ops:
// y = x r w, r = (mean(x^2) + eps)^(-1/2): r' = -r^3 mean(x x'), y' = (x' r + x r') w + x r w'.
// rms_norm_backward's own rules (gradients of gradients): NOTE [rms_norm_backward's rules].
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
      // r keeps its place in the graph: a second derivative reaches x through it too.
      RmsNormBackwardArgs b{d[0], xv, weighted ? weight.get() : Tensor(), r};
      std::vector<Tensor> g = run_op<RmsNormBackward>(b);
      dx = g[0];
      if (weighted) dw = g[1];
    }
    if (d[1].defined()) {  // through rstd itself: d r / d x = -r^3 x / C
      const Tensor rx = cast(r, xv.dtype()).unsqueeze(-1);
      const Tensor coef = mul(cast(d[1], xv.dtype()).unsqueeze(-1), cube(rx));
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
    dr = mul(neg(cube(r)), mean(mul(x, t[0]), {-1}, true));  // (..., 1)
    dy = add(mul(t[0], r), mul(x, dr));
    if (a.weight.defined()) dy = mul(dy, a.weight);
  }
  if (a.weight.defined() && t[1].defined()) dy = add_defined(dy, mul(mul(x, r), t[1]));
  return {dy, dr.defined() ? cast(dr.squeeze(-1), outs[1].dtype()) : Tensor()};
}

// NOTE [rms_norm_backward's rules]: per row, with R = rstd (an input, as the op reads it), g = dy w
// and q = mean(g x): dx = R g - R^3 x q and dw = sum over rows of dy x R. Their vjp and jvp below
// differentiate these expressions in every input, R included.
namespace {

struct RmsNormBackwardTerms {
  Tensor R, g, q;  // (...,1), (...,C), (...,1) in x's dtype
};

RmsNormBackwardTerms terms(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd) {
  const Tensor g = w.defined() ? mul(dy, w) : dy;
  return {cast(rstd, x.dtype()).unsqueeze(-1), g, mean(mul(g, x), {-1}, true)};
}

}  // namespace

Differentiation RmsNormBackward::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> RmsNormBackward::vjp_reads_outputs(const Args&) {
  return {false};
}

VjpRule RmsNormBackward::vjp(const Args& a) {
  const SavedTensor dy(a.dy, "rms_norm_backward"), x(a.x, "rms_norm_backward"),
      weight(a.weight, "rms_norm_backward"), rstd(a.rstd, "rms_norm_backward");
  const bool weighted = a.weight.defined();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor &yv = dy.get(), &xv = x.get(), &r = rstd.get();
    const Tensor w = weighted ? weight.get() : Tensor();
    const RmsNormBackwardTerms t = terms(yv, xv, w, r);
    const double C = double(xv.size(-1));
    const Tensor R3 = cube(t.R);
    Tensor d_g, d_x, d_R, d_dy;
    if (d[0].defined()) {  // through dx = R g - R^3 x q
      const Tensor S = sum(mul(d[0], xv), {-1}, true);
      d_g = sub(mul(t.R, d[0]), mul(xv, mul(R3, mul(S, scalar_like(1 / C, S)))));
      d_x = sub(neg(mul(mul(R3, t.q), d[0])), mul(t.g, mul(R3, mul(S, scalar_like(1 / C, S)))));
      d_R = sub(sum(mul(d[0], t.g), {-1}, true), mul(mul(scalar_like(3, t.R), square(t.R)), mul(t.q, S)));
    }
    if (weighted && d.size() > 1 && d[1].defined()) {  // through dw = sum_rows dy x R
      d_dy = mul(mul(d[1], xv), t.R);
      d_x = add_defined(d_x, mul(mul(d[1], yv), t.R));
      d_R = add_defined(d_R, sum(mul(mul(d[1], yv), xv), {-1}, true));
    }
    Tensor d_w;
    if (d_g.defined()) {  // g = dy w
      d_dy = add_defined(d_dy, weighted ? mul(d_g, w) : d_g);
      if (weighted) d_w = sum(mul(d_g, yv), row_axes(xv));
    }
    const Tensor d_rstd = d_R.defined() ? cast(d_R.squeeze(-1), r.dtype()) : Tensor();
    if (weighted) return {d_dy, d_x, d_w, d_rstd};
    return {d_dy, d_x, d_rstd};
  };
}

std::vector<Tensor> RmsNormBackward::jvp(const Args& a, const std::vector<Tensor>&,
                                         const std::vector<Tensor>& t) {
  const bool weighted = a.weight.defined();
  const Tensor &t_dy = t[0], &t_x = t[1], &t_w = weighted ? t[2] : Tensor(), &t_r = t[weighted ? 3 : 2];
  const RmsNormBackwardTerms k = terms(a.dy, a.x, a.weight, a.rstd);
  Tensor t_g;
  if (t_dy.defined()) t_g = weighted ? mul(t_dy, a.weight) : t_dy;
  if (weighted && t_w.defined()) t_g = add_defined(t_g, mul(a.dy, t_w));
  Tensor t_q;
  if (t_g.defined()) t_q = mean(mul(t_g, a.x), {-1}, true);
  if (t_x.defined()) t_q = add_defined(t_q, mean(mul(k.g, t_x), {-1}, true));
  const Tensor t_R = t_r.defined() ? cast(t_r, a.x.dtype()).unsqueeze(-1) : Tensor();
  const Tensor R3 = cube(k.R);
  Tensor t_dx, t_dw;
  if (t_R.defined()) {
    t_dx = sub(mul(t_R, k.g), mul(mul(scalar_like(3, k.R), mul(square(k.R), t_R)), mul(a.x, k.q)));
    t_dw = mul(mul(a.dy, a.x), t_R);
  }
  if (t_g.defined()) t_dx = add_defined(t_dx, mul(k.R, t_g));
  if (t_x.defined()) {
    t_dx = add_defined(t_dx, neg(mul(mul(R3, t_x), k.q)));
    t_dw = add_defined(t_dw, mul(mul(a.dy, t_x), k.R));
  }
  if (t_q.defined()) t_dx = add_defined(t_dx, neg(mul(mul(R3, a.x), t_q)));
  if (t_dy.defined()) t_dw = add_defined(t_dw, mul(mul(t_dy, a.x), k.R));
  if (!weighted) return {t_dx};
  return {t_dx, t_dw.defined() ? sum(t_dw, row_axes(a.x)) : Tensor()};
}

}  // namespace dew::ops
