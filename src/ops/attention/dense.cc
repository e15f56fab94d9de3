// Attention over materialized scores, with ops: NOTE [attention's higher derivatives] in dense.h.
#include "ops/attention/dense.h"

#include <algorithm>
#include <cmath>

#include "ops/attention/attention.h"
#include "ops/rules_common.h"

namespace dew::ops {

namespace {

DType compute_dtype(const Tensor& q) {
  return q.dtype() == DType::f64 ? DType::f64 : DType::f32;
}

// (B,T,H,D) → (B,H,T,D) in `dtype`; KV tensors (B,S,Hkv,D) get each head repeated `group` times first.
Tensor heads_first(const Tensor& x, int64_t group, DType dtype) {
  Tensor y = as_dtype(x, dtype);
  if (group > 1) {
    const int64_t heads = x.shape()[2] * group;
    std::vector<double> index(static_cast<size_t>(heads));
    for (int64_t h = 0; h < heads; ++h) index[size_t(h)] = double(h / group);
    y = index_select(y, 2, Tensor::from_values(index, {heads}, DType::i64).to(x.device()));
  }
  return permute_copy(y, {0, 2, 1, 3});
}

// (B,H,T,D) → (B,T,H,D); for KV gradients the `group` query heads of each KV head are summed.
Tensor heads_last(const Tensor& x, int64_t group, DType dtype) {
  Tensor y = permute_copy(x, {0, 2, 1, 3});
  if (group > 1) {
    const Shape& s = y.shape();
    y = sum(y.reshape({s[0], s[1], s[2] / group, group, s[3]}), {3});
  }
  return as_dtype(y, dtype);
}

Tensor keys_tangent(const DenseAttention& a, const Tensor& tq, const Tensor& tk, DType dtype) {
  Tensor t;
  if (tq.defined()) t = matmul(heads_first(tq, 1, dtype), a.kh, {.transpose_b = true, .scale = a.scale});
  if (tk.defined())
    t = add_defined(t,
                    matmul(a.qh, heads_first(tk, a.group, dtype), {.transpose_b = true, .scale = a.scale}));
  if (t.defined() && a.capped.defined()) t = mul(t, sub(scalar_like(1, t), square(a.capped)));
  return t;
}

}  // namespace

namespace {

// The heads, and the scores (B,H,T,S) after the softcap, -inf on keys the query does not see; `alive`
// gets whether each row sees a key or a sink. With `dead_rows_see_all`, a row that sees nothing keeps
// all its keys (so that a softmax over it stays finite).
Tensor scores(DenseAttention& a, const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o,
              bool dead_rows_see_all, std::vector<double>& alive) {
  const AttentionGeometry g(q, k, o);
  const DType dtype = compute_dtype(q);
  a.group = g.group;
  a.scale = g.scale;
  a.cap = g.cap;
  a.qh = heads_first(q, 1, dtype);
  a.kh = heads_first(k, g.group, dtype);
  a.vh = heads_first(v, g.group, dtype);
  Tensor s = matmul(a.qh, a.kh, {.transpose_b = true, .scale = g.scale});
  if (g.cap > 0) {
    a.capped = tanh(div(s, scalar_like(g.cap, s)));
    s = mul(a.capped, scalar_like(g.cap, s));
  }
  // The mask is built on the host: the segment ids are read there.
  const Tensor q_segments = o.q_segments.defined() ? o.q_segments.to(Device::cpu()).contiguous() : Tensor();
  const Tensor k_segments = o.k_segments.defined() ? o.k_segments.to(Device::cpu()).contiguous() : Tensor();
  std::vector<double> visible(size_t(g.B * g.T * g.S));
  alive.assign(size_t(g.B * g.T), 0.0);
  for (int64_t b = 0; b < g.B; ++b) {
    const AttentionMask mask = attention_mask(o, g.T, g.S, b, q_segments, k_segments);
    for (int64_t t = 0; t < g.T; ++t) {
      bool any = o.sinks.defined();
      for (int64_t j = 0; j < g.S; ++j) {
        const bool seen = mask.visible(t, j);
        visible[size_t((b * g.T + t) * g.S + j)] = seen;
        any = any || seen;
      }
      alive[size_t(b * g.T + t)] = any;
      if (!any && dead_rows_see_all)
        std::fill_n(visible.begin() + std::ptrdiff_t((b * g.T + t) * g.S), g.S, 1.0);
    }
  }
  return where(Tensor::from_values(visible, {g.B, 1, g.T, g.S}, DType::boolean).to(s.device()), s,
               scalar_like(-INFINITY, s));
}

// The sinks as one more score column (B,H,T,1), joining the denominator with no value.
Tensor sink_column(const Tensor& sinks, const Shape& p, DType dtype) {
  return add(Tensor::zeros({p[0], p[1], p[2], 1}, dtype, sinks.device()),
             as_dtype(sinks, dtype).reshape({1, p[1], 1, 1}));
}

}  // namespace

DenseAttention dense_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  DenseAttention a;
  std::vector<double> alive;
  const Tensor s = scores(a, q, k, v, o, true, alive);
  const Shape p = s.shape();
  const DType dtype = s.dtype();
  // A row that sees nothing (and has no sink) kept all its keys in scores(), so that its softmax stays
  // finite; its probabilities and lse are replaced by 0 and -inf here.
  a.alive = Tensor::from_values(alive, {p[0], 1, p[2], 1}, DType::boolean).to(s.device());
  Tensor lse;
  if (o.sinks.defined()) {
    const Tensor column = sink_column(o.sinks, p, dtype);
    lse = logsumexp(concat({s, column}, 3), {3}, true);
    a.sink_probs = exp(sub(column, lse));
  } else {
    lse = logsumexp(s, {3}, true);
  }
  a.probs = where(a.alive, exp(sub(s, lse)), scalar_like(0, s));
  a.lse = where(a.alive, lse, scalar_like(-INFINITY, lse));
  a.out = matmul(a.probs, a.vh);
  return a;
}

DenseAttention dense_attention_at(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const AttentionOptions& o, const Tensor& out, const Tensor& lse) {
  DenseAttention a;
  std::vector<double> unused;
  const Tensor s = scores(a, q, k, v, o, false, unused);
  const Shape p = s.shape();
  const DType dtype = s.dtype();
  const Tensor given = as_dtype(lse, dtype).reshape({p[0], p[1], p[2], 1});
  a.alive = gt(given, scalar_like(-INFINITY, given));
  const Tensor safe = where(a.alive, given, scalar_like(0, given));  // no exp(s + inf) on dead rows
  a.probs = where(a.alive, exp(sub(s, safe)), scalar_like(0, s));
  if (o.sinks.defined())
    a.sink_probs = where(a.alive, exp(sub(sink_column(o.sinks, p, dtype), safe)), scalar_like(0, safe));
  a.lse = given;
  a.out = heads_first(out, 1, dtype);
  return a;
}

std::vector<Tensor> dense_attention_jvp(const DenseAttention& a, const Tensor& tq, const Tensor& tk,
                                        const Tensor& tv, const Tensor& t_sinks, DType out_dtype,
                                        DType lse_dtype) {
  const DType dtype = a.probs.dtype();
  const Shape& p = a.probs.shape();
  // With ds the tangent of the scores: mu = sum_j p_j ds_j (+ p_sink t_sink) is lse's tangent, and
  // out's is sum_j p_j (ds_j v_j + tv_j) - mu out (NOTE [attention tangent]).
  const Tensor ds = keys_tangent(a, tq, tk, dtype);
  Tensor mu = ds.defined() ? sum(mul(a.probs, ds), {3}, true) : Tensor();
  if (t_sinks.defined() && a.sink_probs.defined())
    mu = add_defined(mu, mul(a.sink_probs, as_dtype(t_sinks, dtype).reshape({1, p[1], 1, 1})));
  if (!mu.defined()) mu = Tensor::zeros({p[0], p[1], p[2], 1}, dtype, a.probs.device());
  Tensor t_out = neg(mul(mu, a.out));
  if (ds.defined()) t_out = add(t_out, matmul(mul(a.probs, ds), a.vh));
  if (tv.defined()) t_out = add(t_out, matmul(a.probs, heads_first(tv, a.group, dtype)));
  const Tensor t_lse = where(a.alive, mu, scalar_like(0, mu));
  return {heads_last(t_out, 1, out_dtype), as_dtype(t_lse.reshape({p[0], p[1], p[2]}), lse_dtype)};
}

std::vector<Tensor> dense_attention_vjp(const DenseAttention& a, const Tensor& d_out, const Tensor& d_lse,
                                        const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& sinks) {
  const DType dtype = a.probs.dtype();
  const Shape& p = a.probs.shape();
  // dS = P (dP - Dr) with dP = dO V^T and Dr = rowsum(dO o) - d_lse (lse's gradient reaches every
  // score through dlse/ds = p); dq = scale dS K, dk = scale dS^T Q, dv = P^T dO.
  Tensor d_oh =
      d_out.defined() ? heads_first(d_out, 1, dtype) : Tensor::zeros(a.out.shape(), dtype, a.out.device());
  Tensor row = sum(mul(d_oh, a.out), {3}, true);
  if (d_lse.defined())
    row =
        sub(row, where(a.alive, as_dtype(d_lse, dtype).reshape({p[0], p[1], p[2], 1}), scalar_like(0, row)));
  Tensor ds = mul(a.probs, sub(matmul(d_oh, a.vh, {.transpose_b = true}), row));
  if (a.capped.defined()) ds = mul(ds, sub(scalar_like(1, ds), square(a.capped)));
  std::vector<Tensor> grads = {
      heads_last(matmul(ds, a.kh, {.scale = a.scale}), 1, q.dtype()),
      heads_last(matmul(ds, a.qh, {.transpose_a = true, .scale = a.scale}), a.group, k.dtype()),
      heads_last(matmul(a.probs, d_oh, {.transpose_a = true}), a.group, v.dtype())};
  if (a.sink_probs.defined())  // dlse/dsink = p_sink, so dsink = -sum p_sink Dr
    grads.push_back(as_dtype(neg(sum(mul(a.sink_probs, row), {0, 2, 3})), sinks.dtype()));
  return grads;
}

}  // namespace dew::ops
