// attention's kernels, written once and compiled per instruction set (NOTE [kernel namespaces]).
// Forward: threads over (B, H, query tiles); each tile walks key tiles with an online softmax, so no
// more than a (query tile x key tile) block of scores exists at a time. Backward: threads over
// (B, KV head), recomputing probabilities from lse, so dk and dv of a KV group have one writer.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "ops/attention/attention.h"
#include "ops/kernel_types.h"
#include "ops/scratch.h"
#include "simd/isa.h"
#include "simd/lanes.h"
#include "simd/vector_math.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

inline constexpr int64_t kQueryTile = 16, kKeyTile = 64;

template <class Acc>
inline Acc capped(Acc s, Acc cap) {
  return cap > 0 ? cap * std::tanh(s / cap) : s;
}

template <int L, bool VectorMathExp, class T>
void attention_forward(const AttentionArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const AttentionOptions& o = a.options;
  const AttentionGeometry g(a.q, a.k, o);
  const int64_t B = g.B, T_ = g.T, H = g.H, D = g.D, S = g.S, Hkv = g.Hkv, group = g.group;
  const Acc scale = Acc(g.scale), cap = Acc(g.cap);
  Scratch<Acc> q = widened<Acc, T>(a.q), k = widened<Acc, T>(a.k), v = widened<Acc, T>(a.v);
  Scratch<Acc> sinks = o.sinks.defined() ? widened<Acc, Acc>(o.sinks) : Scratch<Acc>();
  T* out = outs[0].data<T>();
  Acc* lse = outs[1].data<Acc>();
  const int64_t tiles = (T_ + kQueryTile - 1) / kQueryTile;
  parallel_for(B * H * tiles, 1, [&](int64_t w0, int64_t w1) {
    std::vector<Acc> s(size_t(kQueryTile * kKeyTile)), acc(size_t(kQueryTile * D)), m(kQueryTile),
        l(kQueryTile);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / (H * tiles), h = (w / tiles) % H, t0 = (w % tiles) * kQueryTile;
      const int64_t t1 = std::min(T_, t0 + kQueryTile), hk = h / group;
      AttentionMask mask = attention_mask(o, T_, S, b, o.q_segments, o.k_segments);
      std::fill(acc.begin(), acc.end(), Acc(0));
      std::fill(m.begin(), m.end(), -std::numeric_limits<Acc>::infinity());
      std::fill(l.begin(), l.end(), Acc(0));
      const int64_t j_lo = mask.key_range(t0).first, j_hi = mask.key_range(t1 - 1).second;
      for (int64_t j0 = j_lo; j0 < j_hi; j0 += kKeyTile) {  // key tiles
        const int64_t j1 = std::min(j_hi, j0 + kKeyTile);
        for (int64_t t = t0; t < t1; ++t) {
          Acc* st = s.data() + (t - t0) * kKeyTile;
          const Acc* qt = q.data() + ((b * T_ + t) * H + h) * D;
          Acc tile_max = -std::numeric_limits<Acc>::infinity();
          for (int64_t j = j0; j < j1; ++j) {
            Acc sc = -std::numeric_limits<Acc>::infinity();
            if (mask.visible(t, j))
              sc = capped(scale * dot<L>(qt, k.data() + ((b * S + j) * Hkv + hk) * D, D), cap);
            st[j - j0] = sc;
            tile_max = std::max(tile_max, sc);
          }
          const int64_t r = t - t0;
          const Acc new_m = std::max(m[size_t(r)], tile_max);
          if (new_m == -std::numeric_limits<Acc>::infinity()) continue;  // nothing visible yet
          const Acc correction = exp_with<VectorMathExp>(m[size_t(r)] - new_m);
          Acc* ar = acc.data() + r * D;
          for (int64_t d = 0; d < D; ++d) ar[d] *= correction;
          Acc sum = 0;
          for (int64_t j = j0; j < j1; ++j) {
            const Acc p = exp_with<VectorMathExp>(st[j - j0] - new_m);
            sum += p;
            const Acc* vj = v.data() + ((b * S + j) * Hkv + hk) * D;
            for (int64_t d = 0; d < D; ++d) ar[d] += p * vj[d];
          }
          l[size_t(r)] = l[size_t(r)] * correction + sum;
          m[size_t(r)] = new_m;
        }
      }
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t r = t - t0;
        Acc* ar = acc.data() + r * D;
        if (!sinks.empty()) {  // the sink joins the denominator with no value
          const Acc new_m = std::max(m[size_t(r)], sinks[size_t(h)]);
          const Acc correction = exp_with<VectorMathExp>(m[size_t(r)] - new_m);
          for (int64_t d = 0; d < D; ++d) ar[d] *= correction;
          l[size_t(r)] = l[size_t(r)] * correction + exp_with<VectorMathExp>(sinks[size_t(h)] - new_m);
          m[size_t(r)] = new_m;
        }
        const Acc inv = l[size_t(r)] > 0 ? Acc(1) / l[size_t(r)] : Acc(0);
        T* ot = out + ((b * T_ + t) * H + h) * D;
        for (int64_t d = 0; d < D; ++d) ot[d] = narrow<T>(ar[d] * inv);
        lse[(b * H + h) * T_ + t] =
            l[size_t(r)] > 0 ? m[size_t(r)] + std::log(l[size_t(r)]) : -std::numeric_limits<Acc>::infinity();
      }
    }
  });
}

template <int L, bool VectorMathExp, class T>
void attention_backward(const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const AttentionOptions& o = a.options;
  const AttentionGeometry g(a.q, a.k, o);
  const int64_t B = g.B, T_ = g.T, H = g.H, D = g.D, S = g.S, Hkv = g.Hkv, group = g.group;
  const Acc scale = Acc(g.scale), cap = Acc(g.cap);
  Scratch<Acc> q = widened<Acc, T>(a.q), k = widened<Acc, T>(a.k), v = widened<Acc, T>(a.v),
               dout = widened<Acc, T>(a.dout), out = widened<Acc, T>(a.out), lse = widened<Acc, Acc>(a.lse);
  Scratch<Acc> sinks = o.sinks.defined() ? widened<Acc, Acc>(o.sinks) : Scratch<Acc>();
  Scratch<Acc> dq(int64_t(q.size()), Acc(0)), dk(int64_t(k.size()), Acc(0)), dv(int64_t(v.size()), Acc(0));
  std::vector<Acc> dsink_parts(size_t(B * H), Acc(0));  // summed over b in order below
  parallel_for(B * Hkv, 1, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / Hkv, hk = w % Hkv;
      AttentionMask mask = attention_mask(o, T_, S, b, o.q_segments, o.k_segments);
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t t = 0; t < T_; ++t) {
          const Acc lse_t = lse[size_t((b * H + h) * T_ + t)];
          if (lse_t == -std::numeric_limits<Acc>::infinity()) continue;  // the row saw nothing
          const Acc* qt = q.data() + ((b * T_ + t) * H + h) * D;
          const Acc* dot_ = dout.data() + ((b * T_ + t) * H + h) * D;
          const Acc Dt = dot<L>(dot_, out.data() + ((b * T_ + t) * H + h) * D, D);  // sum_d dout * out
          Acc* dqt = dq.data() + ((b * T_ + t) * H + h) * D;
          if (!sinks.empty())
            dsink_parts[size_t(b * H + h)] -= exp_with<VectorMathExp>(sinks[size_t(h)] - lse_t) * Dt;
          auto [j_lo, j_hi] = mask.key_range(t);
          for (int64_t j = j_lo; j < j_hi; ++j) {
            if (!mask.visible(t, j)) continue;
            const Acc* kj = k.data() + ((b * S + j) * Hkv + hk) * D;
            const Acc* vj = v.data() + ((b * S + j) * Hkv + hk) * D;
            const Acc raw = scale * dot<L>(qt, kj, D);
            const Acc sc = capped(raw, cap);
            const Acc p = exp_with<VectorMathExp>(sc - lse_t);
            Acc ds = p * (dot<L>(dot_, vj, D) - Dt);
            if (cap > 0) {
              const Acc th = sc / cap;
              ds *= Acc(1) - th * th;
            }
            ds *= scale;
            Acc* dkj = dk.data() + ((b * S + j) * Hkv + hk) * D;
            Acc* dvj = dv.data() + ((b * S + j) * Hkv + hk) * D;
            for (int64_t d = 0; d < D; ++d) {
              dqt[d] += ds * kj[d];
              dkj[d] += ds * qt[d];
              dvj[d] += p * dot_[d];
            }
          }
        }
      }
    }
  });
  auto store = [](const Scratch<Acc>& src, Tensor& dst) {
    T* p = dst.data<T>();
    for (size_t i = 0; i < src.size(); ++i) p[i] = narrow<T>(src[i]);
  };
  store(dq, outs[0]);
  store(dk, outs[1]);
  store(dv, outs[2]);
  if (!sinks.empty()) {
    Acc* ds = outs[3].data<Acc>();
    for (int64_t h = 0; h < H; ++h) {
      Acc sum = 0;
      for (int64_t b = 0; b < B; ++b) sum += dsink_parts[size_t(b * H + h)];
      ds[h] = sum;
    }
  }
}

// NOTE [attention tangent]: threads over (B, H); each query row is one pass over its keys with p_j
// recomputed from the saved lse and normalized by their own sum, so every output row has one writer.
template <int L, bool VectorMathExp, class T>
void attention_jvp(const AttentionJvpArgs& a, std::vector<Tensor>& outs) {
  using Acc = AccumulatorOf<T>;
  const AttentionOptions& o = a.options;
  const AttentionGeometry g(a.q, a.k, o);
  const int64_t T_ = g.T, H = g.H, D = g.D, S = g.S, Hkv = g.Hkv, group = g.group;
  const Acc scale = Acc(g.scale), cap = Acc(g.cap);
  Scratch<Acc> q = widened<Acc, T>(a.q), k = widened<Acc, T>(a.k), v = widened<Acc, T>(a.v),
               tq = widened<Acc, T>(a.tq), tk = widened<Acc, T>(a.tk), tv = widened<Acc, T>(a.tv),
               lse = widened<Acc, Acc>(a.lse);
  Scratch<Acc> sinks = o.sinks.defined() ? widened<Acc, Acc>(o.sinks) : Scratch<Acc>();
  Scratch<Acc> t_sinks = a.t_sinks.defined() ? widened<Acc, Acc>(a.t_sinks) : Scratch<Acc>();
  T* t_out = outs[0].data<T>();
  Acc* t_lse = outs[1].data<Acc>();
  parallel_for(g.B * H, 1, [&](int64_t w0, int64_t w1) {
    std::vector<Acc> acc(static_cast<size_t>(D)), own_out(static_cast<size_t>(D));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / H, h = w % H, hk = h / group;
      AttentionMask mask = attention_mask(o, T_, S, b, o.q_segments, o.k_segments);
      for (int64_t t = 0; t < T_; ++t) {
        const int64_t row = (b * T_ + t) * H + h;
        T* to = t_out + row * D;
        const Acc lse_t = lse[size_t((b * H + h) * T_ + t)];
        if (lse_t ==
            -std::numeric_limits<Acc>::infinity()) {  // the row saw nothing: out is 0, so is its tangent
          for (int64_t d = 0; d < D; ++d) to[d] = narrow<T>(Acc(0));
          t_lse[(b * H + h) * T_ + t] = 0;
          continue;
        }
        const Acc *qt = q.data() + row * D, *tqt = tq.data() + row * D;
        std::fill(acc.begin(), acc.end(), Acc(0));
        std::fill(own_out.begin(), own_out.end(), Acc(0));
        Acc mu = 0, l = 0;
        auto [j_lo, j_hi] = mask.key_range(t);
        for (int64_t j = j_lo; j < j_hi; ++j) {
          if (!mask.visible(t, j)) continue;
          const int64_t key = ((b * S + j) * Hkv + hk) * D;
          const Acc *kj = k.data() + key, *vj = v.data() + key, *tkj = tk.data() + key,
                    *tvj = tv.data() + key;
          const Acc sc = capped(scale * dot<L>(qt, kj, D), cap);
          const Acc p = exp_with<VectorMathExp>(sc - lse_t);
          Acc ds = scale * (dot<L>(tqt, kj, D) + dot<L>(qt, tkj, D));
          if (cap > 0) {
            const Acc th = sc / cap;
            ds *= Acc(1) - th * th;
          }
          l += p;
          mu += p * ds;
          for (int64_t d = 0; d < D; ++d) {
            acc[size_t(d)] += p * (ds * vj[d] + tvj[d]);
            own_out[size_t(d)] += p * vj[d];
          }
        }
        if (!sinks.empty()) {
          const Acc p_sink = exp_with<VectorMathExp>(sinks[size_t(h)] - lse_t);
          l += p_sink;
          mu += p_sink * t_sinks[size_t(h)];
        }
        const Acc inv = Acc(1) / l;
        mu *= inv;
        for (int64_t d = 0; d < D; ++d) to[d] = narrow<T>((acc[size_t(d)] - mu * own_out[size_t(d)]) * inv);
        t_lse[(b * H + h) * T_ + t] = mu;
      }
    }
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
