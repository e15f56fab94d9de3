// linear_recurrence in chunks, per CPU tier (cpu.<tier>.chunked_<C>; NOTE [instruction-set regions]):
// threads over (batch, head) rows; each row's tokens in chunks of at most C within one document, each
// chunk's work as matrix products on outer-product tiles (NOTE [chunked recurrence]). f32, bf16 and
// f16 inputs widened to f32 per chunk; the state f32 throughout.
#include <dew/runtime.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/linear_recurrence/linear_recurrence.h"
#include "ops/matmul/outer_tiles.h"
#include "ops/scratch.h"
#include "simd/double_vec.h"
#include "simd/float_vec.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_HAS_FLOAT_VEC
// NOTE [chunked recurrence]: with S0 the state entering a chunk of n tokens and G_t the decays' running
// sum within it (per key, or one per head), token t's state is exp(G_t) S0 plus the chunk's own updates
// decayed from their token s to t by exp(G_t - G_s) <= 1, so
//   out = scale ((Q * exp(G)) S0 + A u),   A[t][s] = q_t . (k_s * exp(G_t - G_s)), s <= t
//   S_n = exp(G_n) S0 + (K * exp(G_n - G))^T u
// where u is v (additive), or for the delta rule the rows of u_t = beta_t (v_t - k_t^T S~_t), which
// unrolled over the chunk are the solution of (I + L) u = beta V - (beta K * exp(G)) S0 with
// L[t][s] = beta_t k_t . (k_s * exp(G_t - G_s)), s < t: the UT form, solved by forward substitution for
// U = (I + L)^-1 beta V and W = (I + L)^-1 (beta K * exp(G)), then u = U - W S0. Every exponent is
// <= 0 for decays <= 1, so nothing overflows however strong the decay. The state is read and written
// once per chunk, where the token-by-token form passes over it four times per token.

// y (P,Q) from a (P x steps; element (p,t) at a[t a_step + p a_row]) times b (steps x Q, row-major),
// each output through store(p, q, value).
template <class Store>
void product(const float* a, int64_t a_step, int64_t a_row, int64_t P, const float* b, int64_t Q,
             int64_t steps, Store&& store) {
  for (int64_t q0 = 0; q0 < Q; q0 += kOuterColumns) outer_block(a, a_step, a_row, P, b, Q, steps, q0, store);
}

// sum_i x[i] k[i] exp(gx[i] - gk[i]) over K keys: a pair of tokens under per-key decays.
float decayed_dot(const float* x, const float* k, const float* gx, const float* gk, int64_t K) {
  constexpr int W = kVecWidth;
  FloatVec acc = 0.0f;
  int64_t i = 0;
  for (; i + W <= K; i += W)
    acc = mul_add(load_vec(x + i) * load_vec(k + i), exp_f32(load_vec(gx + i) - load_vec(gk + i)), acc);
  if (i < K) {
    const int lanes = int(K - i);
    acc = mul_add(load_vec(x + i, lanes) * load_vec(k + i, lanes),
                  exp_f32(load_vec(gx + i, lanes) - load_vec(gk + i, lanes)), acc);
  }
  return lanes_sum(acc);
}

// S (K x V, f32) = d * S + kd^T u with kd (n x K) and u (n x V) in f64, each element summed in f64 and
// rounded once: the delta rule's updates largely cancel the decayed state they correct, and an f32
// sum of them lost up to twice the token-by-token form's accuracy (the gate's RMS ratio read 1.3-1.5).
void update_state(float* S, int64_t K, int64_t V, const double* d, bool per_key, const double* kd,
                  const double* u, int64_t n) {
  constexpr int L = kDoubleLanes, R = 4;  // R vectors of columns per pass
  const auto load = [](const double* p) {
    DoubleVec r;
    std::memcpy(&r.v, p, sizeof(r.v));
    return r;
  };
  for (int64_t i = 0; i < K; ++i) {
    const double di = d[per_key ? i : 0];
    float* row = S + i * V;
    int64_t j = 0;
    for (; j + R * L <= V; j += R * L) {
      DoubleVec acc[R];
      for (int c = 0; c < R; ++c)
        for (int l = 0; l < L; ++l) acc[c].v[l] = di * double(row[j + c * L + l]);
      for (int64_t s = 0; s < n; ++s) {
        const DoubleVec ks = broadcast_double(kd[s * K + i]);
        for (int c = 0; c < R; ++c) acc[c] = mul_add(ks, load(u + s * V + j + c * L), acc[c]);
      }
      for (int c = 0; c < R; ++c)
        for (int l = 0; l < L; ++l) row[j + c * L + l] = float(acc[c].v[l]);
    }
    for (; j < V; ++j) {
      double acc = di * double(row[j]);
      for (int64_t s = 0; s < n; ++s) acc += kd[s * K + i] * u[s * V + j];
      row[j] = float(acc);
    }
  }
}

// One thread's buffers for chunks of up to C tokens.
struct ChunkBuffers {
  Scratch<float> memory;
  float *q, *k, *v, *g, *beta, *kt, *qg, *a, *l, *u, *w, *y, *from_start;
  // f64: the decays' sums, the decayed keys, the additive update rows, the delta rule's solve, the
  // decays over the whole chunk
  std::vector<double> g64, kd, u64, solve, decay_n, to_end;
  ChunkBuffers(int64_t C, int64_t K, int64_t V) : memory(C * (8 * K + 3 * V + 2 * C + 1) + K) {
    float* p = memory.data();
    const auto take = [&](int64_t n) { return std::exchange(p, p + n); };
    q = take(C * K), k = take(C * K), v = take(C * V), g = take(C * K + K), beta = take(C), kt = take(C * K);
    qg = take(C * K), a = take(C * C), l = take(C * C), u = take(C * V), w = take(C * K);
    g64.resize(size_t(C * K + K)), kd.resize(size_t(C * K)), u64.resize(size_t(C * V)),
        solve.resize(size_t(C * V));
    decay_n.resize(size_t(K)), to_end.resize(size_t(C * K));
    y = take(C * V), from_start = take(C * K);
  }
};

template <class T>
void chunked(const LinearRecurrenceArgs& args, std::vector<Tensor>& outs, int64_t C) {
  const int64_t B = args.q.size(0), T_ = args.q.size(1), H = args.q.size(2), K = args.q.size(3),
                V = args.v.size(3), KV = K * V;
  const bool gated = args.gate.defined(), key_gate = args.per_key_gate(), delta = args.beta.defined();
  const int64_t Kg = key_gate ? K : 1;  // decays per token
  const float scale = float(args.options.scale > 0 ? args.options.scale : 1 / std::sqrt(double(K)));
  const Tensor qc = args.q.contiguous(), kc = args.k.contiguous(), vc = args.v.contiguous();
  const Tensor gc = gated ? args.gate.contiguous() : Tensor(), bc = delta ? args.beta.contiguous() : Tensor();
  const Tensor ic = args.initial.defined() ? args.initial.contiguous() : Tensor();
  const Tensor sc = args.options.segments.defined() ? args.options.segments.contiguous() : Tensor();
  const T *q = qc.data<T>(), *k = kc.data<T>(), *v = vc.data<T>();
  const T* g = gated ? gc.data<T>() : nullptr;
  const T* beta = delta ? bc.data<T>() : nullptr;
  const float* initial = ic.defined() ? ic.data<float>() : nullptr;
  const int64_t* segments = sc.defined() ? sc.data<int64_t>() : nullptr;
  T* out = outs[0].data<T>();
  float* states = outs[1].data<float>();
  parallel_for(B * H, 1, [&](int64_t r0, int64_t r1) {
    ChunkBuffers buf(C, K, V);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / H, h = r % H;
      float* S = states + r * KV;  // (b, h) is row r of (B,H,K,V)
      if (initial)
        std::copy_n(initial + r * KV, KV, S);
      else
        std::fill(S, S + KV, 0.0f);
      for (int64_t t0 = 0; t0 < T_;) {
        if (document_starts(segments, T_, b, t0)) std::fill(S, S + KV, 0.0f);
        int64_t n = 1;  // the chunk: up to C tokens of one document
        while (t0 + n < T_ && n < C && !document_starts(segments, T_, b, t0 + n)) ++n;
        // Widen the chunk's rows; G the decays' running sum (zero without a gate), summed in f64 and
        // rounded once: an exponent's error is a relative error of its decay.
        for (int64_t s = 0; s < n; ++s) {
          const int64_t row = (b * T_ + t0 + s) * H + h;
          for (int64_t i = 0; i < K; ++i) {
            buf.q[s * K + i] = widen<float>(q[row * K + i]);
            buf.k[s * K + i] = buf.kt[i * n + s] = widen<float>(k[row * K + i]);
          }
          for (int64_t j = 0; j < V; ++j) buf.v[s * V + j] = widen<float>(v[row * V + j]);
          if (g)
            for (int64_t i = 0; i < Kg; ++i)
              buf.g[s * Kg + i] =
                  float(buf.g64[size_t(s * Kg + i)] = (s > 0 ? buf.g64[size_t((s - 1) * Kg + i)] : 0.0) +
                                                      double(widen<float>(g[row * Kg + i])));
          if (delta) buf.beta[s] = widen<float>(beta[row]);
        }
        const float* G = buf.g;
        // Each token's decay from the chunk's start, exp(G_s), and to its end, exp(G_n - G_s).
        for (int64_t x = 0; x < n * Kg; ++x) {
          buf.from_start[x] = gated ? exp_f32(G[x]) : 1.0f;
          buf.to_end[size_t(x)] =
              gated ? std::exp(buf.g64[size_t((n - 1) * Kg + x % Kg)] - buf.g64[size_t(x)]) : 1.0;
        }
        const auto decay = [&](int64_t s, int64_t i) { return buf.from_start[s * Kg + (key_gate ? i : 0)]; };
        for (int64_t s = 0; s < n; ++s)
          for (int64_t i = 0; i < K; ++i) {
            buf.qg[s * K + i] = scale * buf.q[s * K + i] * decay(s, i);
            buf.kd[size_t(s * K + i)] =
                double(buf.k[s * K + i]) * buf.to_end[size_t(s * Kg + (key_gate ? i : 0))];
          }
        // A (n x n, lower with the diagonal) and, for the delta rule, L (strictly lower).
        const auto pair_products = [&](const float* x, float* m, float row_factor_scale, bool diagonal,
                                       const float* row_factor) {
          if (key_gate) {
            for (int64_t t = 0; t < n; ++t)
              for (int64_t s = 0; s < n; ++s)
                m[t * n + s] = s < t || (diagonal && s == t)
                                   ? row_factor_scale * (row_factor ? row_factor[t] : 1.0f) *
                                         decayed_dot(x + t * K, buf.k + s * K, G + t * K, G + s * K, K)
                                   : 0.0f;
            return;
          }
          product(x, 1, K, n, buf.kt, n, K, [&](int64_t t, int64_t s, float dot) {
            const bool kept = s < t || (diagonal && s == t);
            m[t * n + s] = kept ? row_factor_scale * (row_factor ? row_factor[t] : 1.0f) *
                                      (gated ? exp_f32(G[t] - G[s]) * dot : dot)
                                : 0.0f;
          });
        };
        pair_products(buf.q, buf.a, scale, true, nullptr);
        const float* u = buf.v;
        if (delta) {
          pair_products(buf.k, buf.l, 1.0f, false, buf.beta);
          // The right side beta (v - (k * exp(G)) S0) (w holds k * exp(G)), then the forward
          // substitution, row t less L[t][s] times row s, in f64: its error grows with the chunk's
          // length, where the token-by-token form rounds each token once.
          for (int64_t t = 0; t < n; ++t)
            for (int64_t i = 0; i < K; ++i) buf.w[t * K + i] = buf.k[t * K + i] * decay(t, i);
          product(buf.w, 1, K, n, S, V, K, [&](int64_t t, int64_t j, float x) {
            buf.solve[size_t(t * V + j)] = double(buf.beta[t] * (buf.v[t * V + j] - x));
          });
          for (int64_t t = 0; t < n; ++t) {
            double* ut = buf.solve.data() + t * V;
            for (int64_t s = 0; s < t; ++s) {
              const double m = buf.l[t * n + s], *us = buf.solve.data() + s * V;
              for (int64_t j = 0; j < V; ++j) ut[j] -= m * us[j];
            }
            for (int64_t j = 0; j < V; ++j) buf.u[t * V + j] = float(ut[j]);
          }
          u = buf.u;
        }
        product(buf.qg, 1, K, n, S, V, K, [&](int64_t t, int64_t j, float x) { buf.y[t * V + j] = x; });
        product(buf.a, 1, n, n, u, V, n, [&](int64_t t, int64_t j, float x) { buf.y[t * V + j] += x; });
        // The state after the chunk: exp(G_n) S0 + (K * exp(G_n - G))^T u, with the delta rule's u as
        // the substitution left it in f64.
        for (int64_t i = 0; i < Kg; ++i)
          buf.decay_n[size_t(i)] = gated ? std::exp(buf.g64[size_t((n - 1) * Kg + i)]) : 1.0;
        if (!delta)
          for (int64_t x = 0; x < n * V; ++x) buf.u64[size_t(x)] = double(buf.v[x]);
        update_state(S, K, V, buf.decay_n.data(), key_gate, buf.kd.data(),
                     delta ? buf.solve.data() : buf.u64.data(), n);
        for (int64_t s = 0; s < n; ++s) {
          T* o = out + ((b * T_ + t0 + s) * H + h) * V;
          for (int64_t j = 0; j < V; ++j) o[j] = narrow<T>(buf.y[s * V + j]);
        }
        t0 += n;
      }
    }
  });
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU before the selector has asked for this tier: outside the region.
namespace dew::ops::DEW_KERNEL_NS {

void add_linear_recurrence_cpu(select::Registry<LinearRecurrenceArgs>& r) {
#if DEW_HAS_FLOAT_VEC
  for (int64_t C : {64}) {
    add_cpu_f32_bf16<LinearRecurrenceArgs, true>(
        r,
        [C](auto t, const LinearRecurrenceArgs& a, std::vector<Tensor>& outs) {
          chunked<decltype(t)>(a, outs, C);
        },
        {select::requires_that<LinearRecurrenceArgs>(
            "T >= 2", [](const LinearRecurrenceArgs& a) { return a.q.size(1) >= 2; },
            [](const LinearRecurrenceArgs&) {
              return std::string("one token: the decode step is the token-by-token form's");
            })},
        "chunked_" + std::to_string(C));
  }
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
