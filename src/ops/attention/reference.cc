// attention's float64 references: the full score row of each query, materialized; the
// specification every implementation is judged against, with each element's error magnitude.
// NOTE [attention bounds]: a score carries gamma_D * a_j, a_j = scale * sum_d |q_d k_jd| (+ |s_j| under
// softcap); each probability is then relative to itself widened by (1 + a_j + |s_j - lse|).
#include <cmath>
#include <limits>

#include "ops/attention/attention.h"

namespace dew::ops {
namespace {

// One query row: scores (NaN where masked) and their magnitudes a_j.
void score_row(const AttentionGeometry& g, const AttentionMask& mask, const std::vector<double>& q,
               const std::vector<double>& k, int64_t b, int64_t t, int64_t h, std::vector<double>& s,
               std::vector<double>& a) {
  s.assign(size_t(g.S), std::nan(""));
  a.assign(size_t(g.S), 0.0);
  for (int64_t j = 0; j < g.S; ++j) {  // keys
    if (!mask.visible(t, j)) continue;
    double dot = 0, abs_dot = 0;
    for (int64_t d = 0; d < g.D; ++d) {
      double p = q[g.q_at(b, t, h) + size_t(d)] * k[g.k_at(b, j, h / g.group) + size_t(d)];
      dot += p;
      abs_dot += std::fabs(p);
    }
    double raw = g.scale * dot;
    s[size_t(j)] = g.cap > 0 ? g.cap * std::tanh(raw / g.cap) : raw;
    a[size_t(j)] = g.scale * abs_dot + (g.cap > 0 ? std::fabs(s[size_t(j)]) : 0.0);
  }
}

}  // namespace

std::vector<Truth> Attention::reference(const Args& args) {
  const AttentionOptions& o = args.options;
  AttentionGeometry g(args.q, args.k, o);
  auto q = args.q.to_f64_vector(), k = args.k.to_f64_vector(), v = args.v.to_f64_vector();
  auto sinks = o.sinks.defined() ? o.sinks.to_f64_vector() : std::vector<double>();
  std::vector<double> out(q.size(), 0.0), mout(q.size(), 0.0), lse(size_t(g.B * g.H * g.T)),
      mlse(lse.size(), 0.0);
  std::vector<double> s, a;
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t h = 0; h < g.H; ++h)
      for (int64_t t = 0; t < g.T; ++t) {  // (B, H, T) query rows
        AttentionMask mask = attention_mask(o, g.T, g.S, b, o.q_segments, o.k_segments);
        score_row(g, mask, q, k, b, t, h, s, a);
        double mx = sinks.empty() ? -INFINITY : sinks[size_t(h)];
        for (double x : s)
          if (!std::isnan(x)) mx = std::max(mx, x);
        size_t li = size_t((b * g.H + h) * g.T + t);
        if (mx == -INFINITY) {
          lse[li] = -INFINITY;
          continue;
        }
        double sum = sinks.empty() ? 0.0 : std::exp(sinks[size_t(h)] - mx), spread = 0;
        for (int64_t j = 0; j < g.S; ++j)
          if (!std::isnan(s[size_t(j)]))
            sum += std::exp(s[size_t(j)] - mx), spread = std::max(spread, mx - s[size_t(j)] + a[size_t(j)]);
        double l = mx + std::log(sum);
        lse[li] = l;
        mlse[li] = std::fabs(l) + std::fabs(mx) + 1 + spread;
        for (int64_t j = 0; j < g.S; ++j) {
          if (std::isnan(s[size_t(j)])) continue;
          double p = std::exp(s[size_t(j)] - l),
                 rel = 1 + a[size_t(j)] + std::fabs(s[size_t(j)] - l) + mlse[li];
          for (int64_t d = 0; d < g.D; ++d) {
            double vd = v[g.k_at(b, j, h / g.group) + size_t(d)];
            out[g.q_at(b, t, h) + size_t(d)] += p * vd;
            mout[g.q_at(b, t, h) + size_t(d)] += p * std::fabs(vd) * rel;
          }
        }
      }
  Shape lse_shape{g.B, g.H, g.T};
  return {{Tensor::from_values(out, args.q.shape(), DType::f64),
           Tensor::from_values(mout, args.q.shape(), DType::f64), g.D + g.S + 8},
          {Tensor::from_values(lse, lse_shape, DType::f64), Tensor::from_values(mlse, lse_shape, DType::f64),
           g.D + g.S + 4}};
}

std::vector<Truth> AttentionBackward::reference(const Args& args) {
  const AttentionOptions& o = args.options;
  AttentionGeometry g(args.q, args.k, o);
  auto q = args.q.to_f64_vector(), k = args.k.to_f64_vector(), v = args.v.to_f64_vector();
  auto dout = args.dout.to_f64_vector(), out = args.out.to_f64_vector(), lse = args.lse.to_f64_vector();
  auto sinks = o.sinks.defined() ? o.sinks.to_f64_vector() : std::vector<double>();
  std::vector<double> dq(q.size(), 0), mdq(q.size(), 0), dk(k.size(), 0), mdk(k.size(), 0), dv(v.size(), 0),
      mdv(v.size(), 0), dsink(sinks.size(), 0), mdsink(sinks.size(), 0);
  std::vector<double> s, a;
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t h = 0; h < g.H; ++h)
      for (int64_t t = 0; t < g.T; ++t) {  // (B, H, T) query rows
        double l = lse[size_t((b * g.H + h) * g.T + t)];
        if (l == -INFINITY) continue;
        AttentionMask mask = attention_mask(o, g.T, g.S, b, o.q_segments, o.k_segments);
        score_row(g, mask, q, k, b, t, h, s, a);
        const size_t qi = g.q_at(b, t, h);
        double Dt = 0, mDt = 0;
        for (int64_t d = 0; d < g.D; ++d)
          Dt += dout[qi + size_t(d)] * out[qi + size_t(d)],
              mDt += std::fabs(dout[qi + size_t(d)] * out[qi + size_t(d)]);
        if (!sinks.empty()) {
          double ps = std::exp(sinks[size_t(h)] - l);
          dsink[size_t(h)] -= ps * Dt;
          mdsink[size_t(h)] +=
              ps * ((1 + std::fabs(sinks[size_t(h)] - l) + std::fabs(l)) * std::fabs(Dt) + mDt);
        }
        for (int64_t j = 0; j < g.S; ++j) {  // keys
          if (std::isnan(s[size_t(j)])) continue;
          const size_t ki = g.k_at(b, j, h / g.group);
          double p = std::exp(s[size_t(j)] - l),
                 ep = p * (1 + a[size_t(j)] + std::fabs(s[size_t(j)] - l) + std::fabs(l));
          double dp = 0, mdp = 0;
          for (int64_t d = 0; d < g.D; ++d)
            dp += dout[qi + size_t(d)] * v[ki + size_t(d)],
                mdp += std::fabs(dout[qi + size_t(d)] * v[ki + size_t(d)]);
          double th = g.cap > 0 ? s[size_t(j)] / g.cap : 0, dcap = 1 - th * th;
          double ds = g.scale * p * (dp - Dt) * dcap;
          double mds =
              g.scale * (ep * std::fabs(dp - Dt) + p * (mdp + mDt)) * (1 + 2 * std::fabs(th)) + std::fabs(ds);
          for (int64_t d = 0; d < g.D; ++d) {
            dq[qi + size_t(d)] += ds * k[ki + size_t(d)];
            mdq[qi + size_t(d)] += mds * std::fabs(k[ki + size_t(d)]);
            dk[ki + size_t(d)] += ds * q[qi + size_t(d)];
            mdk[ki + size_t(d)] += mds * std::fabs(q[qi + size_t(d)]);
            dv[ki + size_t(d)] += p * dout[qi + size_t(d)];
            mdv[ki + size_t(d)] += (ep + p) * std::fabs(dout[qi + size_t(d)]);
          }
        }
      }
  const int64_t steps = 2 * g.D + g.S + g.T * g.group + 12;
  std::vector<Truth> r{{Tensor::from_values(dq, args.q.shape(), DType::f64),
                        Tensor::from_values(mdq, args.q.shape(), DType::f64), steps},
                       {Tensor::from_values(dk, args.k.shape(), DType::f64),
                        Tensor::from_values(mdk, args.k.shape(), DType::f64), steps},
                       {Tensor::from_values(dv, args.v.shape(), DType::f64),
                        Tensor::from_values(mdv, args.v.shape(), DType::f64), steps}};
  if (!sinks.empty())
    r.push_back({Tensor::from_values(dsink, {g.H}, DType::f64),
                 Tensor::from_values(mdsink, {g.H}, DType::f64), g.B * g.T + g.D + 8});
  return r;
}

// NOTE [attention tangent] in float64, with magnitudes as NOTE [attention bounds] gives them: p_j
// carries (1 + a_j + |s_j - lse| + |lse|) relative, ds_j its products' absolute sums. The tangent of
// attention at q, k, v: out and lse are this reference's own forward (the given lse only shifts the
// kernels' exponents).
std::vector<Truth> AttentionJvp::reference(const Args& args) {
  const AttentionOptions& o = args.options;
  AttentionGeometry g(args.q, args.k, o);
  auto q = args.q.to_f64_vector(), k = args.k.to_f64_vector(), v = args.v.to_f64_vector();
  auto tq = args.tq.to_f64_vector(), tk = args.tk.to_f64_vector(), tv = args.tv.to_f64_vector();
  const std::vector<Truth> forward = Attention::reference(AttentionArgs{args.q, args.k, args.v, o});
  auto out = forward[0].value.to_f64_vector(), lse = forward[1].value.to_f64_vector();
  auto sinks = o.sinks.defined() ? o.sinks.to_f64_vector() : std::vector<double>();
  auto t_sinks = args.t_sinks.defined() ? args.t_sinks.to_f64_vector() : std::vector<double>();
  std::vector<double> t_out(q.size(), 0), m_out(q.size(), 0), t_lse(lse.size(), 0), m_lse(lse.size(), 0);
  std::vector<double> s, a, acc(size_t(g.D)), macc(size_t(g.D));
  for (int64_t b = 0; b < g.B; ++b)
    for (int64_t h = 0; h < g.H; ++h)
      for (int64_t t = 0; t < g.T; ++t) {  // (B, H, T) query rows
        const size_t li = size_t((b * g.H + h) * g.T + t), qi = g.q_at(b, t, h);
        const double l = lse[li];
        if (l == -INFINITY) continue;  // the row saw nothing: zero tangents
        AttentionMask mask = attention_mask(o, g.T, g.S, b, o.q_segments, o.k_segments);
        score_row(g, mask, q, k, b, t, h, s, a);
        std::fill(acc.begin(), acc.end(), 0.0);
        std::fill(macc.begin(), macc.end(), 0.0);
        double mu = 0, mmu = 0;
        for (int64_t j = 0; j < g.S; ++j) {  // keys
          if (std::isnan(s[size_t(j)])) continue;
          const size_t ki = g.k_at(b, j, h / g.group);
          const double p = std::exp(s[size_t(j)] - l),
                       ep = p * (1 + a[size_t(j)] + std::fabs(s[size_t(j)] - l) + std::fabs(l));
          double raw = 0, mraw = 0;  // scale (tq.k + q.tk) and its absolute sum
          for (int64_t d = 0; d < g.D; ++d) {
            const double x = tq[qi + size_t(d)] * k[ki + size_t(d)],
                         y = q[qi + size_t(d)] * tk[ki + size_t(d)];
            raw += x + y;
            mraw += std::fabs(x) + std::fabs(y);
          }
          const double th = g.cap > 0 ? s[size_t(j)] / g.cap : 0;
          const double ds = g.scale * raw * (1 - th * th);
          const double mds = g.scale * mraw * (1 + 2 * std::fabs(th)) + std::fabs(ds);
          mu += p * ds;
          mmu += ep * std::fabs(ds) + p * mds;
          for (int64_t d = 0; d < g.D; ++d) {
            const double vd = v[ki + size_t(d)], tvd = tv[ki + size_t(d)];
            acc[size_t(d)] += p * (ds * vd + tvd);
            macc[size_t(d)] += ep * std::fabs(ds * vd + tvd) +
                               p * (mds * std::fabs(vd) + std::fabs(ds * vd) + std::fabs(tvd));
          }
        }
        if (!sinks.empty()) {
          const double ps = std::exp(sinks[size_t(h)] - l), ts = t_sinks[size_t(h)];
          mu += ps * ts;
          mmu += ps * (2 + std::fabs(sinks[size_t(h)] - l) + std::fabs(l)) * std::fabs(ts);
        }
        t_lse[li] = mu;
        m_lse[li] = mmu;
        for (int64_t d = 0; d < g.D; ++d) {
          const double od = out[qi + size_t(d)];
          t_out[qi + size_t(d)] = acc[size_t(d)] - mu * od;
          m_out[qi + size_t(d)] = macc[size_t(d)] + mmu * std::fabs(od) + std::fabs(mu * od);
        }
      }
  const int64_t steps = 2 * g.D + g.S + 12;
  const Shape lse_shape{g.B, g.H, g.T};
  return {{Tensor::from_values(t_out, args.q.shape(), DType::f64),
           Tensor::from_values(m_out, args.q.shape(), DType::f64), steps},
          {Tensor::from_values(t_lse, lse_shape, DType::f64),
           Tensor::from_values(m_lse, lse_shape, DType::f64), steps}};
}

}  // namespace dew::ops
