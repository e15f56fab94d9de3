// layer_norm's vjp through layer_norm_backward (and, for gradients reaching the mean and rstd
// outputs, their own derivatives: 1/C and -rstd^3 (x - mean)/C); its jvp with ops:
// y = xh w + b, xh = (x - m) r: m' = mean(x'), r' = -r^3 mean((x - m)(x' - m')),
// y' = ((x' - m') r + (x - m) r') w + xh w' + b'. layer_norm_backward's own rules (gradients of
// gradients): NOTE [layer_norm_backward's rules].
#include "ops/layer_norm/layer_norm.h"
#include "ops/rules_common.h"

namespace dew::ops {

// NOTE [layer_norm_backward's rules]: per row, with the inputs m (mean) and R (rstd) as the op reads
// them, z = x - m, g = dy w, a = mean(g) and P = mean(g z): dx = R g - R a - R^3 z P,
// dw = sum over rows of dy z R, db = sum over rows of dy. backward_vjp and backward_jvp differentiate
// these expressions in every input.
namespace {

struct BackwardTerms {
  Tensor m, R, z, g, a, P;  // (...,1) or (...,C), in x's dtype
};

BackwardTerms backward_terms(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean_in,
                             const Tensor& rstd) {
  BackwardTerms k;
  k.m = cast(mean_in, x.dtype()).unsqueeze(-1);
  k.R = cast(rstd, x.dtype()).unsqueeze(-1);
  k.z = sub(x, k.m);
  k.g = w.defined() ? mul(dy, w) : dy;
  k.a = mean(k.g, {-1}, true);
  k.P = mean(mul(k.g, k.z), {-1}, true);
  return k;
}

Tensor to_stat(const Tensor& t, DType stat) {
  return t.defined() ? cast(t.squeeze(-1), stat) : Tensor();
}

VjpRule backward_vjp(const LayerNormArgs& a) {
  const SavedTensor dy(a.dy, "layer_norm_backward"), x(a.x, "layer_norm_backward"),
      weight(a.weight, "layer_norm_backward"), mean_in(a.mean, "layer_norm_backward"),
      rstd(a.rstd, "layer_norm_backward");
  const bool weighted = a.weight.defined();
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>&) -> std::vector<Tensor> {
    const Tensor &yv = dy.get(), &xv = x.get();
    const Tensor w = weighted ? weight.get() : Tensor();
    const BackwardTerms k = backward_terms(yv, xv, w, mean_in.get(), rstd.get());
    const Tensor inv_c = scalar_like(1.0 / double(xv.size(-1)), xv), R3 = cube(k.R);
    Tensor g_g, g_z, g_R, g_dy;
    if (d[0].defined()) {  // dx = R g - R a - R^3 z P
      const Tensor S = sum(mul(d[0], k.z), {-1}, true), sum_a = sum(d[0], {-1}, true);
      g_g = sub(sub(mul(k.R, d[0]), mul(mul(k.R, sum_a), inv_c)), mul(mul(mul(R3, S), inv_c), k.z));
      g_z = neg(add(mul(mul(R3, k.P), d[0]), mul(mul(mul(R3, S), inv_c), k.g)));
      g_R = sub(sub(sum(mul(d[0], k.g), {-1}, true), mul(k.a, sum_a)),
                mul(mul(scalar_like(3, k.R), square(k.R)), mul(k.P, S)));
    }
    if (weighted && d.size() > 1 && d[1].defined()) {  // dw = sum_rows dy z R
      g_dy = mul(mul(d[1], k.z), k.R);
      g_z = add_defined(g_z, mul(mul(d[1], yv), k.R));
      g_R = add_defined(g_R, sum(mul(mul(d[1], yv), k.z), {-1}, true));
    }
    if (weighted && d.size() > 2 && d[2].defined()) g_dy = add_defined(g_dy, d[2].expand(xv.shape()));
    Tensor g_w;
    if (g_g.defined()) {  // g = dy w
      g_dy = add_defined(g_dy, weighted ? mul(g_g, w) : g_g);
      if (weighted) g_w = sum(mul(g_g, yv), row_axes(xv));
    }
    const DType stat = rstd.get().dtype();
    const Tensor g_m = g_z.defined() ? neg(sum(g_z, {-1}, true)) : Tensor();  // z = x - m
    std::vector<Tensor> grads{g_dy, g_z};
    if (weighted) grads.push_back(g_w);
    grads.push_back(to_stat(g_m, stat));
    grads.push_back(to_stat(g_R, stat));
    return grads;
  };
}

std::vector<Tensor> backward_jvp(const LayerNormArgs& a, const std::vector<Tensor>& t) {
  const bool weighted = a.weight.defined();
  size_t next = 2;
  const Tensor &t_dy = t[0], &t_x = t[1];
  const Tensor t_w = weighted ? t[next++] : Tensor();
  const Tensor t_m = t[next++], t_r = t[next++];
  const BackwardTerms k = backward_terms(a.dy, a.x, a.weight, a.mean, a.rstd);
  const Tensor R3 = cube(k.R);
  Tensor t_g, t_z;
  if (t_dy.defined()) t_g = weighted ? mul(t_dy, a.weight) : t_dy;
  if (weighted && t_w.defined()) t_g = add_defined(t_g, mul(a.dy, t_w));
  if (t_x.defined()) t_z = t_x;
  if (t_m.defined()) t_z = add_defined(t_z, neg(cast(t_m, a.x.dtype()).unsqueeze(-1)).expand(a.x.shape()));
  const Tensor t_R = t_r.defined() ? cast(t_r, a.x.dtype()).unsqueeze(-1) : Tensor();
  Tensor t_a, t_P;
  if (t_g.defined()) t_a = mean(t_g, {-1}, true), t_P = mean(mul(t_g, k.z), {-1}, true);
  if (t_z.defined()) t_P = add_defined(t_P, mean(mul(k.g, t_z), {-1}, true));
  Tensor t_dx, t_dw;
  if (t_R.defined()) {
    t_dx = sub(sub(mul(t_R, k.g), mul(t_R, k.a)),
               mul(mul(scalar_like(3, k.R), mul(square(k.R), t_R)), mul(k.z, k.P)));
    t_dw = mul(mul(a.dy, k.z), t_R);
  }
  if (t_g.defined()) t_dx = add_defined(t_dx, mul(k.R, sub(t_g, t_a)));
  if (t_z.defined()) {
    t_dx = add_defined(t_dx, neg(mul(mul(R3, t_z), k.P)));
    t_dw = add_defined(t_dw, mul(mul(a.dy, t_z), k.R));
  }
  if (t_P.defined()) t_dx = add_defined(t_dx, neg(mul(mul(R3, k.z), t_P)));
  if (t_dy.defined()) t_dw = add_defined(t_dw, mul(mul(t_dy, k.z), k.R));
  if (!weighted) return {t_dx};
  return {t_dx, t_dw.defined() ? sum(t_dw, row_axes(a.x)) : Tensor(),
          t_dy.defined() ? sum(t_dy, row_axes(a.x)) : Tensor()};
}

}  // namespace

Differentiation LayerNorm::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> LayerNorm::vjp_reads_outputs(const Args&) {
  return {false, true, true};
}

VjpRule LayerNorm::vjp(const Args& a) {
  if (a.backward) return backward_vjp(a);
  const SavedTensor x(a.x, "layer_norm"), weight(a.weight, "layer_norm");
  const bool has_weight = a.weight.defined(), has_bias = a.bias.defined();
  const double eps = a.eps;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
    const Tensor& xv = x.get();
    const double inv_c = 1.0 / double(xv.size(-1));
    Tensor dx, dw, db;
    if (d[0].defined()) {
      // mean and rstd keep their place in the graph: a second derivative reaches x through them too.
      LayerNormArgs b{d[0], xv, has_weight ? weight.get() : Tensor(), Tensor(), outs[1], outs[2], eps, true};
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
      dx = add_defined(dx, mul(mul(cast(d[2], xv.dtype()).unsqueeze(-1), cube(r)),
                               mul(sub(xv, m), scalar_like(-inv_c, xv))));
    std::vector<Tensor> grads{dx};
    if (has_weight) grads.push_back(dw);
    if (has_bias) grads.push_back(db);
    return grads;
  };
}

std::vector<Tensor> LayerNorm::jvp(const Args& a, const std::vector<Tensor>& outs,
                                   const std::vector<Tensor>& t) {
  if (a.backward) return backward_jvp(a, t);
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
    dr = mul(neg(cube(r)), mean(mul(centered, dc), {-1}, true));
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
