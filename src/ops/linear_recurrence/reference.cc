// linear_recurrence's float64 references: the naive recurrence, one token at a time, written once over
// a number type that carries each value's error magnitude (NOTE [recurrence bounds]); the tangent is
// the same recurrence over dual numbers, the gradient its reverse sweep over every stored state.
// NOTE [recurrence bounds]: a Bounded value's magnitude bounds the sums of absolute terms it is made of
// (Higham's running error bound): sums add magnitudes, products multiply them, exp(x) is exp(x)(1 + m_x)
// (a rounded exponent shifts it relatively). The delta rule's magnitudes grow with the sequence where
// its values do not (its products are contractions only in norm), so the bound is loose there; the
// gate's RMS ratios against the portable arm carry the judgement.
#include <cmath>

#include "ops/linear_recurrence/linear_recurrence.h"

namespace dew::ops {
namespace {

struct Bounded {
  double v = 0, m = 0;
};
Bounded operator+(Bounded a, Bounded b) {
  return {a.v + b.v, a.m + b.m};
}
Bounded operator-(Bounded a, Bounded b) {
  return {a.v - b.v, a.m + b.m};
}
Bounded operator*(Bounded a, Bounded b) {
  return {a.v * b.v, a.m * b.m};
}
Bounded exp_of(Bounded a) {
  const double e = std::exp(a.v);
  return {e, e * (1 + a.m)};
}
Bounded exact(double x) {
  return {x, std::fabs(x)};
}

// A value and its tangent: forward mode in float64.
struct Dual {
  Bounded v, t;
};
Dual operator+(Dual a, Dual b) {
  return {a.v + b.v, a.t + b.t};
}
Dual operator-(Dual a, Dual b) {
  return {a.v - b.v, a.t - b.t};
}
Dual operator*(Dual a, Dual b) {
  return {a.v * b.v, a.v * b.t + a.t * b.v};
}
Dual exp_of(Dual a) {
  const Bounded e = exp_of(a.v);
  return {e, e * a.t};
}

// One call's inputs as numbers of type N, contiguous in their (B,T,H,*) layouts.
template <class N>
struct Sequences {
  int64_t B = 0, T = 0, H = 0, K = 0, V = 0;
  bool key_gate = false, delta = false;
  std::vector<N> q, k, v, gate, beta, initial;  // gate, beta, initial empty where not given
  std::vector<int64_t> segments;
  N scale;
  size_t at_k(int64_t b, int64_t t, int64_t h) const { return size_t(((b * T + t) * H + h) * K); }
  size_t at_v(int64_t b, int64_t t, int64_t h) const { return size_t(((b * T + t) * H + h) * V); }
  size_t at_head(int64_t b, int64_t t, int64_t h) const { return size_t((b * T + t) * H + h); }
  size_t at_state(int64_t b, int64_t h) const { return size_t((b * H + h) * K * V); }
  bool reset(int64_t b, int64_t t) const {
    return document_starts(segments.empty() ? nullptr : segments.data(), T, b, t);
  }
  N decay(int64_t b, int64_t t, int64_t h, int64_t i) const {
    return exp_of(gate[key_gate ? at_k(b, t, h) + size_t(i) : at_head(b, t, h)]);
  }
};

template <class N, class Make>
Sequences<N> sequences(const LinearRecurrenceArgs& a, Make make) {
  Sequences<N> x;
  x.B = a.q.size(0), x.T = a.q.size(1), x.H = a.q.size(2), x.K = a.q.size(3), x.V = a.v.size(3);
  x.key_gate = a.per_key_gate(), x.delta = a.beta.defined();
  x.q = make(a.q, 0), x.k = make(a.k, 1), x.v = make(a.v, 2);
  if (a.gate.defined()) x.gate = make(a.gate, 3);
  if (a.beta.defined()) x.beta = make(a.beta, 4);
  if (a.initial.defined()) x.initial = make(a.initial, 5);
  if (a.options.segments.defined())
    for (double id : a.options.segments.to_f64_vector()) x.segments.push_back(int64_t(id));
  const double scale = a.options.scale > 0 ? a.options.scale : 1 / std::sqrt(double(x.K));
  x.scale = make(Tensor::full({}, scale, DType::f64), -1)[0];
  return x;
}

std::vector<Bounded> exact_values(const Tensor& t) {
  std::vector<Bounded> r;
  for (double x : t.to_f64_vector()) r.push_back(exact(x));
  return r;
}

// One token: S (K x V, row-major) decayed and updated in place; `decayed` receives S~ where asked.
template <class N>
void step(const Sequences<N>& x, int64_t b, int64_t t, int64_t h, std::vector<N>& S,
          std::vector<N>* decayed = nullptr) {
  const int64_t K = x.K, V = x.V;
  if (!x.gate.empty())
    for (int64_t i = 0; i < K; ++i) {
      const N a = x.decay(b, t, h, i);
      for (int64_t j = 0; j < V; ++j) S[size_t(i * V + j)] = a * S[size_t(i * V + j)];
    }
  if (decayed) *decayed = S;
  const size_t kt = x.at_k(b, t, h), vt = x.at_v(b, t, h);
  std::vector<N> u(x.v.begin() + std::ptrdiff_t(vt), x.v.begin() + std::ptrdiff_t(vt + size_t(V)));
  if (x.delta) {
    const N beta = x.beta[x.at_head(b, t, h)];
    for (int64_t j = 0; j < V; ++j) {
      N w{};
      for (int64_t i = 0; i < K; ++i) w = w + x.k[kt + size_t(i)] * S[size_t(i * V + j)];
      u[size_t(j)] = beta * (u[size_t(j)] - w);
    }
  }
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < V; ++j)
      S[size_t(i * V + j)] = S[size_t(i * V + j)] + x.k[kt + size_t(i)] * u[size_t(j)];
}

// out_t = scale * S_t^T q_t into out at (b, t, h).
template <class N>
void emit(const Sequences<N>& x, int64_t b, int64_t t, int64_t h, const std::vector<N>& S,
          std::vector<N>& out) {
  for (int64_t j = 0; j < x.V; ++j) {
    N acc{};
    for (int64_t i = 0; i < x.K; ++i) acc = acc + x.q[x.at_k(b, t, h) + size_t(i)] * S[size_t(i * x.V + j)];
    out[x.at_v(b, t, h) + size_t(j)] = x.scale * acc;
  }
}

// The whole recurrence: out (B,T,H,V) and the final state (B,H,K,V).
template <class N>
void run_forward(const Sequences<N>& x, std::vector<N>& out, std::vector<N>& final_state) {
  const size_t KV = size_t(x.K * x.V);
  out.assign(size_t(x.B * x.T * x.H * x.V), N{});
  final_state.assign(size_t(x.B * x.H) * KV, N{});
  for (int64_t b = 0; b < x.B; ++b)
    for (int64_t h = 0; h < x.H; ++h) {
      std::vector<N> S(KV, N{});
      if (!x.initial.empty())
        std::copy_n(x.initial.begin() + std::ptrdiff_t(x.at_state(b, h)), KV, S.begin());
      for (int64_t t = 0; t < x.T; ++t) {
        if (x.reset(b, t)) std::fill(S.begin(), S.end(), N{});
        step(x, b, t, h, S);
        emit(x, b, t, h, S, out);
      }
      std::copy(S.begin(), S.end(), final_state.begin() + std::ptrdiff_t(x.at_state(b, h)));
    }
}

// The roundings along any path to an output: every token's update, with the delta rule's K-term
// prediction, then the output's K-term sum.
int64_t recurrence_steps(const LinearRecurrenceArgs& a) {
  const int64_t T = a.q.size(1), K = a.q.size(3), V = a.v.size(3);
  return T * (K + 4) + K + V + 8;
}

Truth truth_of(const std::vector<Bounded>& x, const Shape& shape, int64_t steps) {
  std::vector<double> v, m;
  for (const Bounded& e : x) v.push_back(e.v), m.push_back(e.m);
  return {Tensor::from_values(v, shape, DType::f64), Tensor::from_values(m, shape, DType::f64), steps};
}

Shape state_shape(const LinearRecurrenceArgs& a) {
  return {a.q.size(0), a.q.size(2), a.q.size(3), a.v.size(3)};
}

}  // namespace

std::vector<Truth> LinearRecurrence::reference(const Args& a) {
  const Sequences<Bounded> x = sequences<Bounded>(a, [](const Tensor& t, int) { return exact_values(t); });
  std::vector<Bounded> out, state;
  run_forward(x, out, state);
  const int64_t steps = recurrence_steps(a);
  return {truth_of(out, a.v.shape(), steps), truth_of(state, state_shape(a), steps)};
}

std::vector<Truth> LinearRecurrenceJvp::reference(const Args& a) {
  const std::vector<const Tensor*> tangents{&a.tq, &a.tk, &a.tv, &a.t_gate, &a.t_beta, &a.t_initial};
  const Sequences<Dual> x = sequences<Dual>(a.forward, [&](const Tensor& t, int which) {
    const std::vector<Bounded> v = exact_values(t);
    const std::vector<Bounded> d =
        which >= 0 ? exact_values(*tangents[size_t(which)]) : std::vector<Bounded>(v.size());
    std::vector<Dual> r;
    for (size_t i = 0; i < v.size(); ++i) r.push_back({v[i], d[i]});
    return r;
  });
  std::vector<Dual> out, state;
  run_forward(x, out, state);
  std::vector<Bounded> t_out, t_state;
  for (const Dual& e : out) t_out.push_back(e.t);
  for (const Dual& e : state) t_state.push_back(e.t);
  const int64_t steps = 2 * recurrence_steps(a.forward);
  return {truth_of(t_out, a.forward.v.shape(), steps), truth_of(t_state, state_shape(a.forward), steps)};
}

// The reverse sweep: every token's decayed state S~ and state S_t kept from a forward pass, then from
// the last token to the first, dS (the state's gradient) collects the output's q dy^T, hands each input
// its share, and passes back through the update and the decay (zero across a document start).
std::vector<Truth> LinearRecurrenceBackward::reference(const Args& args) {
  const LinearRecurrenceArgs& a = args.forward;
  const Sequences<Bounded> x = sequences<Bounded>(a, [](const Tensor& t, int) { return exact_values(t); });
  const int64_t T = x.T, K = x.K, V = x.V;
  const size_t KV = size_t(K * V);
  const std::vector<Bounded> dy = exact_values(args.d_out);
  const std::vector<Bounded> d_state =
      args.d_state.defined() ? exact_values(args.d_state) : std::vector<Bounded>(size_t(x.B * x.H) * KV);
  std::vector<Bounded> dq(x.q.size()), dk(x.k.size()), dv(x.v.size()), dg(x.gate.size()), db(x.beta.size()),
      d_initial(x.initial.size());
  for (int64_t b = 0; b < x.B; ++b)
    for (int64_t h = 0; h < x.H; ++h) {
      std::vector<std::vector<Bounded>> decayed(static_cast<size_t>(T)), states(static_cast<size_t>(T));
      std::vector<Bounded> S(KV);
      if (!x.initial.empty())
        std::copy_n(x.initial.begin() + std::ptrdiff_t(x.at_state(b, h)), KV, S.begin());
      for (int64_t t = 0; t < T; ++t) {
        if (x.reset(b, t)) std::fill(S.begin(), S.end(), Bounded{});
        step(x, b, t, h, S, &decayed[size_t(t)]);
        states[size_t(t)] = S;
      }
      std::vector<Bounded> dS(d_state.begin() + std::ptrdiff_t(x.at_state(b, h)),
                              d_state.begin() + std::ptrdiff_t(x.at_state(b, h) + KV));
      for (int64_t t = T - 1; t >= 0; --t) {
        const std::vector<Bounded>&St = states[size_t(t)], &Sd = decayed[size_t(t)];
        const size_t kt = x.at_k(b, t, h), vt = x.at_v(b, t, h), ht = x.at_head(b, t, h);
        for (int64_t i = 0; i < K; ++i) {  // the output
          Bounded acc{};
          for (int64_t j = 0; j < V; ++j) acc = acc + St[size_t(i * V + j)] * dy[vt + size_t(j)];
          dq[kt + size_t(i)] = x.scale * acc;
          for (int64_t j = 0; j < V; ++j)
            dS[size_t(i * V + j)] =
                dS[size_t(i * V + j)] + x.scale * x.q[kt + size_t(i)] * dy[vt + size_t(j)];
        }
        // The update S_t = S~ + k u^T, u = v or beta (v - S~^T k).
        std::vector<Bounded> u(V), du(V), w(V);
        for (int64_t j = 0; j < V; ++j) {
          for (int64_t i = 0; i < K; ++i) {
            w[size_t(j)] = w[size_t(j)] + x.k[kt + size_t(i)] * Sd[size_t(i * V + j)];
            du[size_t(j)] = du[size_t(j)] + dS[size_t(i * V + j)] * x.k[kt + size_t(i)];
          }
          u[size_t(j)] = x.delta ? x.beta[ht] * (x.v[vt + size_t(j)] - w[size_t(j)]) : x.v[vt + size_t(j)];
        }
        for (int64_t i = 0; i < K; ++i) {
          Bounded acc{};
          for (int64_t j = 0; j < V; ++j) acc = acc + dS[size_t(i * V + j)] * u[size_t(j)];
          dk[kt + size_t(i)] = acc;
        }
        if (x.delta) {
          Bounded dbeta{};
          std::vector<Bounded> dw(V);
          for (int64_t j = 0; j < V; ++j) {
            dv[vt + size_t(j)] = x.beta[ht] * du[size_t(j)];
            dbeta = dbeta + du[size_t(j)] * (x.v[vt + size_t(j)] - w[size_t(j)]);
            dw[size_t(j)] = Bounded{} - x.beta[ht] * du[size_t(j)];
          }
          db[ht] = dbeta;
          for (int64_t i = 0; i < K; ++i) {
            Bounded acc{};
            for (int64_t j = 0; j < V; ++j) {
              acc = acc + Sd[size_t(i * V + j)] * dw[size_t(j)];
              dS[size_t(i * V + j)] = dS[size_t(i * V + j)] + x.k[kt + size_t(i)] * dw[size_t(j)];
            }
            dk[kt + size_t(i)] = dk[kt + size_t(i)] + acc;
          }
        } else {
          for (int64_t j = 0; j < V; ++j) dv[vt + size_t(j)] = du[size_t(j)];
        }
        // The decay S~ = a S_{t-1}: d a_i = sum_j dS~ S~ (per key, or summed over the head's keys).
        if (!x.gate.empty()) {
          Bounded head{};
          for (int64_t i = 0; i < K; ++i) {
            Bounded acc{};
            for (int64_t j = 0; j < V; ++j) acc = acc + dS[size_t(i * V + j)] * Sd[size_t(i * V + j)];
            if (x.key_gate)
              dg[kt + size_t(i)] = acc;
            else
              head = head + acc;
            const Bounded d = x.decay(b, t, h, i);
            for (int64_t j = 0; j < V; ++j) dS[size_t(i * V + j)] = d * dS[size_t(i * V + j)];
          }
          if (!x.key_gate) dg[ht] = head;
        }
        if (x.reset(b, t)) std::fill(dS.begin(), dS.end(), Bounded{});
      }
      if (!x.initial.empty())
        std::copy(dS.begin(), dS.end(), d_initial.begin() + std::ptrdiff_t(x.at_state(b, h)));
    }
  const int64_t steps = 2 * recurrence_steps(a);
  std::vector<Truth> r{truth_of(dq, a.q.shape(), steps), truth_of(dk, a.k.shape(), steps),
                       truth_of(dv, a.v.shape(), steps)};
  if (a.gate.defined()) r.push_back(truth_of(dg, a.gate.shape(), steps));
  if (a.beta.defined()) r.push_back(truth_of(db, a.beta.shape(), steps));
  if (a.initial.defined()) r.push_back(truth_of(d_initial, a.initial.shape(), steps));
  return r;
}

}  // namespace dew::ops
