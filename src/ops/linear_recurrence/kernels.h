// linear_recurrence one token at a time, written once and built per instruction set (NOTE [kernel
// namespaces]): L = 1 in portable.cc (the gate's reference arm), kLanes in cpu.cc (the decode step and
// the backward on the CPU tiers), where each row's sums take L partial lanes. Threads over (batch, head)
// rows; the state in f32 (f64 for f64) and each output rounded once. The backward keeps the state every
// kChunk tokens and recomputes a chunk's states before sweeping it in reverse, so its memory is
// (T / kChunk + kChunk) states per thread, not T.
#pragma once

#include <dew/runtime.h>

#include <cmath>
#include <vector>

#include "ops/kernel_types.h"
#include "ops/linear_recurrence/linear_recurrence.h"
#include "simd/isa.h"
#include "simd/lanes.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

constexpr int64_t kChunk = 64;

// A call's inputs, contiguous, with their (B,T,H,*) offsets.
template <class T>
struct Inputs {
  using Acc = AccumulatorOf<T>;
  Tensor held[7];  // the contiguous tensors the pointers read
  const T *q = nullptr, *k = nullptr, *v = nullptr, *gate = nullptr, *beta = nullptr;
  const Acc* initial = nullptr;
  const int64_t* segments = nullptr;
  int64_t B, T_, H, K, V;
  bool key_gate;
  Acc scale;

  explicit Inputs(const LinearRecurrenceArgs& a)
      : B(a.q.size(0)),
        T_(a.q.size(1)),
        H(a.q.size(2)),
        K(a.q.size(3)),
        V(a.v.size(3)),
        key_gate(a.per_key_gate()),
        scale(Acc(a.options.scale > 0 ? a.options.scale : 1 / std::sqrt(double(K)))) {
    int n = 0;
    const auto hold = [&](const Tensor& t) -> const void* {
      if (!t.defined()) return nullptr;
      held[n] = t.contiguous();
      return held[n++].raw_data();
    };
    q = static_cast<const T*>(hold(a.q)), k = static_cast<const T*>(hold(a.k));
    v = static_cast<const T*>(hold(a.v)), gate = static_cast<const T*>(hold(a.gate));
    beta = static_cast<const T*>(hold(a.beta)), initial = static_cast<const Acc*>(hold(a.initial));
    segments = static_cast<const int64_t*>(hold(a.options.segments));
  }
  int64_t at_k(int64_t b, int64_t t, int64_t h) const { return ((b * T_ + t) * H + h) * K; }
  int64_t at_v(int64_t b, int64_t t, int64_t h) const { return ((b * T_ + t) * H + h) * V; }
  int64_t at_head(int64_t b, int64_t t, int64_t h) const { return (b * T_ + t) * H + h; }
  int64_t at_state(int64_t b, int64_t h) const { return (b * H + h) * K * V; }
  bool reset(int64_t b, int64_t t) const { return document_starts(segments, T_, b, t); }
  // exp(gate) for key i's row (1 without a gate).
  Acc decay(int64_t b, int64_t t, int64_t h, int64_t i) const {
    if (!gate) return Acc(1);
    return std::exp(widen<Acc>(gate[key_gate ? at_k(b, t, h) + i : at_head(b, t, h)]));
  }
  // Key i's decay given the head's, computed once a token (`head`: decay(b, t, h, 0) for a head's gate).
  Acc row_decay(int64_t b, int64_t t, int64_t h, int64_t i, Acc head) const {
    return key_gate ? decay(b, t, h, i) : head;
  }
};

// One token's first half on S (K x V) in place: the decay; then u receives the update's row (v, or the
// delta rule's beta (v - w)) and w the prediction w = S~^T k.
template <class T, class Acc>
void decay_and_row(const Inputs<T>& x, int64_t b, int64_t t, int64_t h, Acc* S, Acc* u, Acc* w) {
  const int64_t K = x.K, V = x.V;
  const Acc head = x.gate && !x.key_gate ? x.decay(b, t, h, 0) : Acc(1);
  if (x.gate)
    for (int64_t i = 0; i < K; ++i) {
      const Acc a = x.row_decay(b, t, h, i, head);
      for (int64_t j = 0; j < V; ++j) S[i * V + j] *= a;
    }
  const T *k = x.k + x.at_k(b, t, h), *v = x.v + x.at_v(b, t, h);
  for (int64_t j = 0; j < V; ++j) u[j] = widen<Acc>(v[j]);
  if (!x.beta) return;
  std::fill(w, w + V, Acc(0));
  for (int64_t i = 0; i < K; ++i) {
    const Acc ki = widen<Acc>(k[i]);
    for (int64_t j = 0; j < V; ++j) w[j] += ki * S[i * V + j];
  }
  const Acc beta = widen<Acc>(x.beta[x.at_head(b, t, h)]);
  for (int64_t j = 0; j < V; ++j) u[j] = beta * (u[j] - w[j]);
}

// One token on S in place: decay, then S += k u^T.
template <class T, class Acc>
void step(const Inputs<T>& x, int64_t b, int64_t t, int64_t h, Acc* S, Acc* u, Acc* w) {
  decay_and_row(x, b, t, h, S, u, w);
  const T* k = x.k + x.at_k(b, t, h);
  for (int64_t i = 0; i < x.K; ++i) {
    const Acc ki = widen<Acc>(k[i]);
    for (int64_t j = 0; j < x.V; ++j) S[i * x.V + j] += ki * u[j];
  }
}

// One token of the forward, fused: the state's rows are read and written once for the decay and the
// update and the output (twice with the delta rule, whose prediction w needs the whole decayed state
// before u exists), where decay_and_row, step and emit pass over them four times. Each element gets
// the same operations in the same order as theirs, so the values are the same bits.
template <class T, class Acc>
void fused_token(const Inputs<T>& x, int64_t b, int64_t t, int64_t h, Acc* S, Acc* u, Acc* w, Acc* acc,
                 T* out) {
  const int64_t K = x.K, V = x.V;
  const int64_t kt = x.at_k(b, t, h), vt = x.at_v(b, t, h);
  const T *k = x.k + kt, *q = x.q + kt, *v = x.v + vt;
  const Acc head = x.gate && !x.key_gate ? x.decay(b, t, h, 0) : Acc(1);
  for (int64_t j = 0; j < V; ++j) u[j] = widen<Acc>(v[j]);
  const bool decay_in_update = x.gate && !x.beta;  // the delta rule decays in its first pass
  if (x.beta) {
    std::fill(w, w + V, Acc(0));
    for (int64_t i = 0; i < K; ++i) {
      Acc* row = S + i * V;
      const Acc ki = widen<Acc>(k[i]);
      if (x.gate) {
        const Acc a = x.row_decay(b, t, h, i, head);
        for (int64_t j = 0; j < V; ++j) row[j] *= a;
      }
      for (int64_t j = 0; j < V; ++j) w[j] += ki * row[j];
    }
    const Acc beta = widen<Acc>(x.beta[x.at_head(b, t, h)]);
    for (int64_t j = 0; j < V; ++j) u[j] = beta * (u[j] - w[j]);
  }
  std::fill(acc, acc + V, Acc(0));
  for (int64_t i = 0; i < K; ++i) {
    Acc* row = S + i * V;
    const Acc ki = widen<Acc>(k[i]), qi = widen<Acc>(q[i]);
    if (decay_in_update) {
      const Acc a = x.row_decay(b, t, h, i, head);
      for (int64_t j = 0; j < V; ++j) {
        row[j] *= a;
        row[j] += ki * u[j];
        acc[j] += qi * row[j];
      }
    } else {
      for (int64_t j = 0; j < V; ++j) {
        row[j] += ki * u[j];
        acc[j] += qi * row[j];
      }
    }
  }
  for (int64_t j = 0; j < V; ++j) out[vt + j] = narrow<T>(x.scale * acc[j]);
}

template <int L, class T>
void forward(const LinearRecurrenceArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const Inputs<T> x(a);
  T* out = outs[0].data<T>();
  Acc* final_state = outs[1].data<Acc>();
  const int64_t KV = x.K * x.V;
  parallel_for(x.B * x.H, 1, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> u(static_cast<size_t>(x.V)), w(static_cast<size_t>(x.V)), acc(static_cast<size_t>(x.V));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / x.H, h = r % x.H;
      Acc* S = final_state + x.at_state(b, h);
      if (x.initial)
        std::copy_n(x.initial + x.at_state(b, h), KV, S);
      else
        std::fill(S, S + KV, Acc(0));
      for (int64_t t = 0; t < x.T_; ++t) {
        if (x.reset(b, t)) std::fill(S, S + KV, Acc(0));
        fused_token(x, b, t, h, S, u.data(), w.data(), acc.data(), out);
      }
    }
  });
}

// NOTE [recurrence reverse sweep]: from the last token, dS (the state's gradient, from d_state) takes
// scale q dy^T at each output; the update S_t = S~ + k u^T gives dk = dS u and du = dS^T k, and for
// the delta rule (u = beta (v - w), w = S~^T k) dv = beta du, dbeta = du.(v - w) and, with
// dw = -beta du, dS~ = dS + k dw^T and dk += S~ dw; the decay S~ = a S_{t-1} gives d gate = a row's
// sum of dS~ * S~ and dS_{t-1} = a dS~. Across a document start dS restarts from zero.
template <int L, class T>
void backward(const LinearRecurrenceBackwardArgs& args, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const LinearRecurrenceArgs& a = args.forward;
  const Inputs<T> x(a);
  const Tensor dyc = args.d_out.contiguous();
  const Tensor dsc = args.d_state.defined() ? args.d_state.contiguous() : Tensor();
  const T* dy = dyc.data<T>();
  const Acc* d_state = dsc.defined() ? dsc.data<Acc>() : nullptr;
  size_t o = 0;
  T *dq = outs[o++].data<T>(), *dk = outs[o++].data<T>(), *dv = outs[o++].data<T>();
  T* dg = a.gate.defined() ? outs[o++].data<T>() : nullptr;
  T* db = a.beta.defined() ? outs[o++].data<T>() : nullptr;
  Acc* d_initial = a.initial.defined() ? outs[o++].data<Acc>() : nullptr;
  const int64_t K = x.K, V = x.V, KV = K * V, chunks = (x.T_ + kChunk - 1) / kChunk;
  parallel_for(x.B * x.H, 1, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> entering(static_cast<size_t>(chunks * KV)),
        states(static_cast<size_t>((kChunk + 1) * KV)), decayed(static_cast<size_t>(KV)),
        dS(static_cast<size_t>(KV)), u(static_cast<size_t>(V)), w(static_cast<size_t>(V)),
        du(static_cast<size_t>(V)), dw(static_cast<size_t>(V)), dk_row(static_cast<size_t>(K)),
        dy_row(static_cast<size_t>(V));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / x.H, h = r % x.H;
      Acc* S = states.data();  // the forward pass, keeping each chunk's entering state
      if (x.initial)
        std::copy_n(x.initial + x.at_state(b, h), KV, S);
      else
        std::fill(S, S + KV, Acc(0));
      for (int64_t t = 0; t < x.T_; ++t) {
        if (t % kChunk == 0) std::copy_n(S, KV, entering.data() + (t / kChunk) * KV);
        if (x.reset(b, t)) std::fill(S, S + KV, Acc(0));
        step(x, b, t, h, S, u.data(), w.data());
      }
      if (d_state)
        std::copy_n(d_state + x.at_state(b, h), KV, dS.data());
      else
        std::fill(dS.begin(), dS.end(), Acc(0));
      for (int64_t c = chunks - 1; c >= 0; --c) {
        const int64_t c0 = c * kChunk, c1 = std::min(x.T_, c0 + kChunk);
        std::copy_n(entering.data() + c * KV, KV, states.data());  // states[1 + t - c0]: after token t
        for (int64_t t = c0; t < c1; ++t) {
          Acc* St = states.data() + (t - c0 + 1) * KV;
          std::copy_n(St - KV, KV, St);
          if (x.reset(b, t)) std::fill(St, St + KV, Acc(0));
          step(x, b, t, h, St, u.data(), w.data());
        }
        for (int64_t t = c1 - 1; t >= c0; --t) {
          const Acc* St = states.data() + (t - c0 + 1) * KV;
          std::copy_n(St - KV, KV, decayed.data());  // S~, from the state before t
          if (x.reset(b, t)) std::fill(decayed.begin(), decayed.end(), Acc(0));
          decay_and_row(x, b, t, h, decayed.data(), u.data(), w.data());
          const int64_t kt = x.at_k(b, t, h), vt = x.at_v(b, t, h), ht = x.at_head(b, t, h);
          const T *q = x.q + kt, *k = x.k + kt, *v = x.v + vt, *dyt = dy + vt;
          for (int64_t j = 0; j < V; ++j) dy_row[size_t(j)] = widen<Acc>(dyt[j]);
          for (int64_t i = 0; i < K; ++i) {  // the output
            dq[kt + i] = narrow<T>(x.scale * dot<L>(St + i * V, dy_row.data(), V));
            const Acc qi = x.scale * widen<Acc>(q[i]);
            for (int64_t j = 0; j < V; ++j) dS[size_t(i * V + j)] += qi * dy_row[size_t(j)];
          }
          std::fill(du.begin(), du.end(), Acc(0));
          for (int64_t i = 0; i < K; ++i) {  // the update
            const Acc ki = widen<Acc>(k[i]);
            for (int64_t j = 0; j < V; ++j) du[size_t(j)] += dS[size_t(i * V + j)] * ki;
            dk_row[size_t(i)] = dot<L>(dS.data() + i * V, u.data(), V);
          }
          if (x.beta) {
            const Acc beta = widen<Acc>(x.beta[ht]);
            for (int64_t j = 0; j < V; ++j) {
              dv[vt + j] = narrow<T>(beta * du[size_t(j)]);
              dw[size_t(j)] = -beta * du[size_t(j)];
            }
            db[ht] = narrow<T>(lane_sum<L, Acc>(
                V, [&](int64_t j) { return du[size_t(j)] * (widen<Acc>(v[j]) - w[size_t(j)]); }));
            for (int64_t i = 0; i < K; ++i) {
              const Acc ki = widen<Acc>(k[i]);
              dk_row[size_t(i)] += dot<L>(decayed.data() + i * V, dw.data(), V);
              for (int64_t j = 0; j < V; ++j) dS[size_t(i * V + j)] += ki * dw[size_t(j)];
            }
          } else {
            for (int64_t j = 0; j < V; ++j) dv[vt + j] = narrow<T>(du[size_t(j)]);
          }
          for (int64_t i = 0; i < K; ++i) dk[kt + i] = narrow<T>(dk_row[size_t(i)]);
          if (x.gate) {  // the decay
            const Acc head_decay = x.key_gate ? Acc(1) : x.decay(b, t, h, 0);
            Acc head = 0;
            for (int64_t i = 0; i < K; ++i) {
              const Acc s = dot<L>(dS.data() + i * V, decayed.data() + i * V, V);
              if (x.key_gate)
                dg[kt + i] = narrow<T>(s);
              else
                head += s;
              const Acc a_i = x.row_decay(b, t, h, i, head_decay);
              for (int64_t j = 0; j < V; ++j) dS[size_t(i * V + j)] *= a_i;
            }
            if (!x.key_gate) dg[ht] = narrow<T>(head);
          }
          if (x.reset(b, t)) std::fill(dS.begin(), dS.end(), Acc(0));
        }
      }
      if (d_initial) std::copy(dS.begin(), dS.end(), d_initial + x.at_state(b, h));
    }
  });
}

// The tangent recurrence beside the state: dS~ = a (dS + d_gate S) (a row's d_gate, or the head's),
// then dS = dS~ + dk u^T + k du^T with du = dv, or for the delta rule
// du = d_beta (v - w) + beta (dv - dS~^T k - S~^T dk); the output's tangent scale (S^T dq + dS^T q).
template <int L, class T>
void tangent(const LinearRecurrenceJvpArgs& args, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const LinearRecurrenceArgs& a = args.forward;
  const Inputs<T> x(a);
  LinearRecurrenceArgs tangents = a;  // the tangents in the primals' places, for their offsets
  tangents.q = args.tq, tangents.k = args.tk, tangents.v = args.tv;
  tangents.gate = args.t_gate, tangents.beta = args.t_beta, tangents.initial = args.t_initial;
  const Inputs<T> d(tangents);
  T* t_out = outs[0].data<T>();
  Acc* t_state = outs[1].data<Acc>();
  const int64_t K = x.K, V = x.V, KV = K * V;
  parallel_for(x.B * x.H, 1, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> S(static_cast<size_t>(KV)), u(static_cast<size_t>(V)), w(static_cast<size_t>(V)),
        du(static_cast<size_t>(V)), acc(static_cast<size_t>(V));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / x.H, h = r % x.H;
      Acc* dS = t_state + x.at_state(b, h);
      if (x.initial) {
        std::copy_n(x.initial + x.at_state(b, h), KV, S.data());
        std::copy_n(d.initial + x.at_state(b, h), KV, dS);
      } else {
        std::fill(S.begin(), S.end(), Acc(0));
        std::fill(dS, dS + KV, Acc(0));
      }
      for (int64_t t = 0; t < x.T_; ++t) {
        if (x.reset(b, t)) std::fill(S.begin(), S.end(), Acc(0)), std::fill(dS, dS + KV, Acc(0));
        const int64_t kt = x.at_k(b, t, h), vt = x.at_v(b, t, h), ht = x.at_head(b, t, h);
        const Acc head_decay = x.gate && !x.key_gate ? x.decay(b, t, h, 0) : Acc(1);
        if (x.gate)
          for (int64_t i = 0; i < K; ++i) {
            const Acc a_i = x.row_decay(b, t, h, i, head_decay);
            const Acc dg = widen<Acc>(d.gate[x.key_gate ? kt + i : ht]);
            for (int64_t j = 0; j < V; ++j) dS[i * V + j] = a_i * (dS[i * V + j] + dg * S[size_t(i * V + j)]);
          }
        decay_and_row(x, b, t, h, S.data(), u.data(), w.data());
        const T *k = x.k + kt, *dk = d.k + kt, *dv = d.v + vt;
        for (int64_t j = 0; j < V; ++j) du[size_t(j)] = widen<Acc>(dv[j]);
        if (x.beta) {
          const Acc beta = widen<Acc>(x.beta[ht]), d_beta = widen<Acc>(d.beta[ht]);
          std::vector<Acc>& dw = acc;
          std::fill(dw.begin(), dw.end(), Acc(0));
          for (int64_t i = 0; i < K; ++i) {
            const Acc ki = widen<Acc>(k[i]), dki = widen<Acc>(dk[i]);
            for (int64_t j = 0; j < V; ++j) dw[size_t(j)] += dS[i * V + j] * ki + S[size_t(i * V + j)] * dki;
          }
          const T* v = x.v + vt;
          for (int64_t j = 0; j < V; ++j)
            du[size_t(j)] =
                d_beta * (widen<Acc>(v[j]) - w[size_t(j)]) + beta * (du[size_t(j)] - dw[size_t(j)]);
        }
        for (int64_t i = 0; i < K; ++i) {
          const Acc ki = widen<Acc>(k[i]), dki = widen<Acc>(dk[i]);
          for (int64_t j = 0; j < V; ++j) {
            dS[i * V + j] += dki * u[size_t(j)] + ki * du[size_t(j)];
            S[size_t(i * V + j)] += ki * u[size_t(j)];
          }
        }
        const T *q = x.q + kt, *dq = d.q + kt;
        std::fill(acc.begin(), acc.end(), Acc(0));
        for (int64_t i = 0; i < K; ++i) {
          const Acc qi = widen<Acc>(q[i]), dqi = widen<Acc>(dq[i]);
          for (int64_t j = 0; j < V; ++j) acc[size_t(j)] += dqi * S[size_t(i * V + j)] + qi * dS[i * V + j];
        }
        for (int64_t j = 0; j < V; ++j) t_out[vt + j] = narrow<T>(x.scale * acc[size_t(j)]);
      }
    }
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
