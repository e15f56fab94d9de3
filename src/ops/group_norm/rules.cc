// group_norm's rules: each (image, group) is a row of N = (C/G)*positions values, normalized as
// layer_norm normalizes a row. The vjp is group_norm_backward (fused; where its own derivative is
// needed, its composite below: dy w per channel through layer_norm_backward on those rows, dweight and
// dbias sums of dy xhat and dy over all but the channels) plus the paths through the mean and rstd
// outputs (1/N and -rstd^3 (x - mean)/N). The jvp is layer_norm's on the rows: m' = mean(x'),
// r' = -r^3 mean((x - m)(x' - m')).
#include "ops/group_norm/group_norm.h"
#include "ops/rules_common.h"

namespace dew::ops {
namespace {

// v (C) shaped to broadcast over x (B,C,...).
Tensor per_channel(const Tensor& v, int64_t rank) {
  Shape s(size_t(rank), 1);
  s[1] = v.size(0);
  return v.reshape(s);
}

std::vector<int64_t> all_but_channels(int64_t rank) {
  std::vector<int64_t> axes{0};
  for (int64_t i = 2; i < rank; ++i) axes.push_back(i);
  return axes;
}

// x as (rows, N), and the statistics (B,G) as (rows, 1) in x's dtype.
struct Rows {
  Tensor x, mean, rstd;
};
Rows rows_of(const Tensor& x, const Tensor& mean, const Tensor& rstd) {
  const int64_t rows = mean.numel();
  return {x.contiguous().reshape({rows, x.numel() / rows}),
          cast(mean.reshape({rows}), x.dtype()).unsqueeze(-1),
          cast(rstd.reshape({rows}), x.dtype()).unsqueeze(-1)};
}

}  // namespace

// group_norm_backward written with ops (its composite: layer_norm_backward on the rows, whose rules
// carry gradients of gradients), where a derivative of the gradients is needed.
std::vector<Tensor> group_norm_backward_composite(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                  const Tensor& mean, const Tensor& rstd) {
  const Shape shape = x.shape();
  const int64_t rank = x.dim(), rows = mean.numel(), N = x.numel() / rows;
  const Rows r = rows_of(x, mean, rstd);
  const Tensor g = weight.defined() ? mul(dy, per_channel(weight, rank)) : dy;
  // mean and rstd keep their place in the graph: a second derivative reaches x through them too.
  const LayerNormResult stats{Tensor(), mean.reshape({rows}), rstd.reshape({rows})};
  std::vector<Tensor> grads{
      layer_norm_backward(g.contiguous().reshape({rows, N}), r.x, Tensor(), stats).dx.reshape(shape)};
  if (weight.defined()) {
    grads.push_back(sum(mul(dy, mul(sub(r.x, r.mean), r.rstd).reshape(shape)), all_but_channels(rank)));
    grads.push_back(sum(dy, all_but_channels(rank)));
  }
  return grads;
}

Differentiation GroupNorm::differentiation(std::string_view) {
  return Differentiation::rules;
}

std::vector<bool> GroupNorm::vjp_reads_outputs(const Args&) {
  return {false, true, true};
}

VjpRule GroupNorm::vjp(const Args& a) {
  const SavedTensor x(a.x, "group_norm"), weight(a.weight, "group_norm");
  const bool has_weight = a.weight.defined(), has_bias = a.bias.defined();
  const int64_t groups = a.groups;
  return [=](const std::vector<Tensor>& d, const std::vector<Tensor>& outs) -> std::vector<Tensor> {
    const Tensor& xv = x.get();
    const Shape shape = xv.shape();
    const int64_t rank = xv.dim(), rows = outs[1].numel(), N = xv.numel() / rows;
    Tensor dx, dw, db;
    if (d[0].defined()) {
      const std::vector<Tensor> g =
          group_norm_backward(d[0], xv, has_weight ? weight.get() : Tensor(), outs[1], outs[2], groups);
      dx = g[0];
      if (has_weight) dw = g[1], db = g[2];
      if (has_bias && !has_weight) db = sum(d[0], all_but_channels(rank));
    }
    const double inv_n = 1.0 / double(N);
    if (d[1].defined())  // d mean / d x = 1/N
      dx = add_defined(dx, mul(cast(d[1].reshape({rows}), xv.dtype()).unsqueeze(-1), scalar_like(inv_n, xv))
                               .expand({rows, N})
                               .contiguous()
                               .reshape(shape));
    if (d[2].defined()) {  // d rstd / d x = -r^3 (x - m) / N
      const Rows r = rows_of(xv, outs[1], outs[2]);
      dx = add_defined(dx, mul(mul(cast(d[2].reshape({rows}), xv.dtype()).unsqueeze(-1), cube(r.rstd)),
                               mul(sub(r.x, r.mean), scalar_like(-inv_n, xv)))
                               .reshape(shape));
    }
    std::vector<Tensor> grads{dx};
    if (has_weight) grads.push_back(dw);
    if (has_bias) grads.push_back(db);
    return grads;
  };
}

std::vector<Tensor> GroupNorm::jvp(const Args& a, const std::vector<Tensor>& outs,
                                   const std::vector<Tensor>& t) {
  const Shape shape = a.x.shape(), stats = outs[1].shape();
  const int64_t rank = a.x.dim();
  const Rows r = rows_of(a.x, outs[1], outs[2]);
  const Tensor centered = sub(r.x, r.mean);
  size_t next = 1;
  const Tensor tw = a.weight.defined() ? t[next++] : Tensor();
  const Tensor tb = a.bias.defined() ? t[next++] : Tensor();
  Tensor dy, dm, dr;
  if (t[0].defined()) {
    const Tensor tr = t[0].contiguous().reshape(r.x.shape());
    dm = mean(tr, {-1}, true);
    const Tensor dc = sub(tr, dm);
    dr = mul(neg(cube(r.rstd)), mean(mul(centered, dc), {-1}, true));
    dy = add(mul(dc, r.rstd), mul(centered, dr)).reshape(shape);
    if (a.weight.defined()) dy = mul(dy, per_channel(a.weight, rank));
  }
  if (tw.defined()) dy = add_defined(dy, mul(mul(centered, r.rstd).reshape(shape), per_channel(tw, rank)));
  if (tb.defined()) dy = add_defined(dy, per_channel(tb, rank).expand(shape));
  const DType s = outs[1].dtype();
  return {dy, dm.defined() ? cast(dm.reshape(stats), s) : Tensor(),
          dr.defined() ? cast(dr.reshape(stats), s) : Tensor()};
}

}  // namespace dew::ops
