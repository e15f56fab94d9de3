// attention and its backward as blocked GEMMs (cpu.avx2.flash_gemm, cpu.avx512.flash_gemm: built once
// per tier, NOTE [instruction-set regions]): per (batch, head, block of 128 queries), key blocks of 256
// go through oneDNN's sgemm (S = Q K^T, then O += P V) with the online softmax between them; masks
// cost only the blocks they cut. Each pool thread runs its GEMMs on one OpenMP thread, so oneDNN's
// team does not oversubscribe the pool. f32 and bf16 (queries widened once, keys and values per block).
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "ops/attention/kernels.h"
#include "ops/cpu_tier.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

constexpr int64_t kQueryBlock = 128, kKeyBlock = 256;

void check_sgemm(dnnl_status_t s) {
  DEW_REQUIRE(s == dnnl_success, "[attention] oneDNN sgemm failed with status {}", int(s));
}

// The columns [lo, hi) of key block j0 (cols wide) that causality and the window let query t see; the
// segment test, when there are segments, is mask_segments' job. Masked columns are filled, not tested
// one by one, so the loops over visible ones vectorize.
std::pair<int64_t, int64_t> visible_columns(const AttentionMask& mask, int64_t t, int64_t j0, int64_t cols) {
  const auto [lo, hi] = mask.key_range(t);
  const int64_t c_lo = std::clamp<int64_t>(lo - j0, 0, cols);
  return {c_lo, std::clamp<int64_t>(hi - j0, c_lo, cols)};
}

// row[j] = value where key j0 + j lies in another document than query t (packed sequences).
void mask_segments(const AttentionMask& mask, int64_t t, int64_t j0, int64_t c_lo, int64_t c_hi, float* row,
                   float value) {
  if (!mask.q_segments) return;
  const int64_t segment = mask.q_segments[t];
  for (int64_t j = c_lo; j < c_hi; ++j)
    if (mask.k_segments[j0 + j] != segment) row[j] = value;
}

template <class T>
void attention_flash_gemm(const AttentionArgs& a, std::vector<Tensor>& outs) {
  const AttentionOptions& o = a.options;
  const AttentionGeometry g(a.q, a.k, o);
  const float scale = float(g.scale), cap = float(g.cap);
  Scratch<float> q = widened<float, T>(a.q);
  Scratch<float> sinks = o.sinks.defined() ? widened<float, float>(o.sinks) : Scratch<float>();
  // Keys and values: f32 read in place; bf16 widened one key block at a time into the thread's
  // buffers. Widening the whole of K and V per call (a decode step's whole cache) cost more than the
  // attention itself, in fresh memory at every step (docs/perf.md).
  const Tensor k_tensor = a.k.contiguous(), v_tensor = a.v.contiguous();
  const T* k = k_tensor.data<T>();
  const T* v = v_tensor.data<T>();
  constexpr bool widen_blocks = !std::is_same_v<T, float>;
  T* out = outs[0].data<T>();
  float* lse = outs[1].data<float>();
  const int64_t blocks = (g.T + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.B * g.H * blocks, 1, [&](int64_t w0, int64_t w1) {
    omp_set_num_threads(1);
    const int64_t most_rows = std::min(g.T, kQueryBlock);  // a decode step has one: no 128 KiB to clear
    std::vector<float> s(size_t(most_rows * kKeyBlock)), acc(size_t(most_rows * g.D)),
        m(static_cast<size_t>(most_rows)), l(static_cast<size_t>(most_rows));
    std::vector<float> k_block(widen_blocks ? size_t(kKeyBlock * g.D) : 0), v_block(k_block.size());
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / (g.H * blocks), h = (w / blocks) % g.H, t0 = (w % blocks) * kQueryBlock;
      const int64_t t1 = std::min(g.T, t0 + kQueryBlock), rows = t1 - t0, hk = h / g.group;
      AttentionMask mask = attention_mask(o, g.T, g.S, b, o.q_segments, o.k_segments);
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.0f);
      const int64_t j_lo = mask.key_range(t0).first, j_hi = mask.key_range(t1 - 1).second;
      const float* qb = q.data() + g.q_at(b, t0, h);
      for (int64_t j0 = j_lo; j0 < j_hi; j0 += kKeyBlock) {  // key blocks
        const int64_t cols = std::min(j_hi, j0 + kKeyBlock) - j0;
        const float* kb;
        const float* vb;
        int64_t ld = g.Hkv * g.D;
        if constexpr (widen_blocks) {
          for (int64_t c = 0; c < cols; ++c) {
            row_as<float>(k + g.k_at(b, j0 + c, hk), g.D, k_block.data() + c * g.D);
            row_as<float>(v + g.k_at(b, j0 + c, hk), g.D, v_block.data() + c * g.D);
          }
          kb = k_block.data(), vb = v_block.data(), ld = g.D;
        } else {
          kb = k + g.k_at(b, j0, hk), vb = v + g.k_at(b, j0, hk);
        }
        if (rows == 1) {  // a decode step: dot products, not a GEMM call per head and key block
          for (int64_t c = 0; c < cols; ++c)
            s[size_t(c)] =
                scale * lane_sum<kLanes, float>(g.D, [&](int64_t d) { return qb[d] * kb[c * ld + d]; });
        } else {
          check_sgemm(
              dnnl_sgemm('N', 'T', rows, cols, g.D, scale, qb, g.H * g.D, kb, ld, 0.0f, s.data(), cols));
        }
        for (int64_t r = 0; r < rows; ++r) {  // online softmax, row by row
          float* sr = s.data() + r * cols;
          const int64_t t = t0 + r;
          const auto seen = visible_columns(mask, t, j0, cols);  // not a structured binding: a lambda uses it
          const int64_t c_lo = seen.first, c_hi = seen.second;
          if (cap > 0)
            for (int64_t j = c_lo; j < c_hi; ++j) sr[j] = cap * std::tanh(sr[j] / cap);
          mask_segments(mask, t, j0, c_lo, c_hi, sr, -INFINITY);
          const float tile_max = row_max<kLanes, float>(sr + c_lo, c_hi - c_lo);
          const float new_m = std::max(m[size_t(r)], tile_max);
          if (new_m == -INFINITY) {
            std::fill(sr, sr + cols, 0.0f);
            continue;
          }
          const float correction = exp_f32(m[size_t(r)] - new_m);
          std::fill(sr, sr + c_lo, 0.0f);
          std::fill(sr + c_hi, sr + cols, 0.0f);
          for (int64_t j = c_lo; j < c_hi; ++j) sr[j] = exp_f32_within_2ulp(sr[j] - new_m);
          const float sum = lane_sum<kLanes, float>(
              c_hi - c_lo, [&](int64_t j) { return sr[c_lo + j]; });  // eight lanes: a sum that vectorizes
          float* ar = acc.data() + r * g.D;
          for (int64_t d = 0; d < g.D; ++d) ar[d] *= correction;
          l[size_t(r)] = l[size_t(r)] * correction + sum;
          m[size_t(r)] = new_m;
        }
        if (rows == 1) {
          for (int64_t c = 0; c < cols; ++c) {
            const float p = s[size_t(c)];
            for (int64_t d = 0; d < g.D; ++d) acc[size_t(d)] += p * vb[c * ld + d];
          }
        } else {
          check_sgemm(
              dnnl_sgemm('N', 'N', rows, g.D, cols, 1.0f, s.data(), cols, vb, ld, 1.0f, acc.data(), g.D));
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r;
        float* ar = acc.data() + r * g.D;
        if (!sinks.empty()) {  // the sink joins the denominator with no value
          const float new_m = std::max(m[size_t(r)], sinks[size_t(h)]);
          const float correction = exp_f32(m[size_t(r)] - new_m);
          for (int64_t d = 0; d < g.D; ++d) ar[d] *= correction;
          l[size_t(r)] = l[size_t(r)] * correction + exp_f32(sinks[size_t(h)] - new_m);
          m[size_t(r)] = new_m;
        }
        const float inv = l[size_t(r)] > 0 ? 1.0f / l[size_t(r)] : 0.0f;
        T* ot = out + g.q_at(b, t, h);
        for (int64_t d = 0; d < g.D; ++d) ot[d] = narrow<T>(ar[d] * inv);
        lse[(b * g.H + h) * g.T + t] = l[size_t(r)] > 0 ? m[size_t(r)] + std::log(l[size_t(r)]) : -INFINITY;
      }
    }
  });
}

template <class T>
void attention_backward_flash_gemm(const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
  const AttentionOptions& o = a.options;
  const AttentionGeometry g(a.q, a.k, o);
  const float scale = float(g.scale), cap = float(g.cap);
  Scratch<float> q = widened<float, T>(a.q), k = widened<float, T>(a.k), v = widened<float, T>(a.v),
                 dout = widened<float, T>(a.dout), out = widened<float, T>(a.out),
                 lse = widened<float, float>(a.lse);
  Scratch<float> sinks = o.sinks.defined() ? widened<float, float>(o.sinks) : Scratch<float>();
  // Per query head: dq in place; dk and dv as partials summed over the group in head order below.
  // dq accumulates in place: in the output itself when that is f32.
  Scratch<float> dq = std::is_same_v<T, float> ? Scratch<float>(outs[0]) : Scratch<float>(int64_t(q.size()));
  std::fill(dq.data(), dq.data() + dq.size(), 0.0f);
  Scratch<float> dk_h(g.B * g.H * g.S * g.D, 0.0f), dv_h(g.B * g.H * g.S * g.D, 0.0f);
  std::vector<float> dsink_parts(size_t(g.B * g.H), 0.0f);
  const int64_t ld_q = g.H * g.D, ld_k = g.Hkv * g.D;
  parallel_for(g.B * g.H, 1, [&](int64_t w0, int64_t w1) {
    omp_set_num_threads(1);
    std::vector<float> p(size_t(kQueryBlock * kKeyBlock)), dp(p.size()), delta(size_t(g.T));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / g.H, h = w % g.H, hk = h / g.group;
      AttentionMask mask = attention_mask(o, g.T, g.S, b, o.q_segments, o.k_segments);
      const float* lse_bh = lse.data() + (b * g.H + h) * g.T;
      for (int64_t t = 0; t < g.T; ++t) {  // delta_t = sum_d dout * out
        const float* dt = dout.data() + g.q_at(b, t, h);
        const float* ot = out.data() + g.q_at(b, t, h);
        const float d = dot<kLanes, float>(dt, ot, g.D);
        delta[size_t(t)] = d;
        if (!sinks.empty() && lse_bh[t] != -INFINITY)
          dsink_parts[size_t(w)] -= exp_f32(sinks[size_t(h)] - lse_bh[t]) * d;
      }
      float* dkh = dk_h.data() + size_t((b * g.H + h) * g.S * g.D);
      float* dvh = dv_h.data() + size_t((b * g.H + h) * g.S * g.D);
      for (int64_t t0 = 0; t0 < g.T; t0 += kQueryBlock) {  // query blocks
        const int64_t t1 = std::min(g.T, t0 + kQueryBlock), rows = t1 - t0;
        const int64_t j_lo = mask.key_range(t0).first, j_hi = mask.key_range(t1 - 1).second;
        const float* qb = q.data() + g.q_at(b, t0, h);
        const float* dob = dout.data() + g.q_at(b, t0, h);
        float* dqb = dq.data() + g.q_at(b, t0, h);
        for (int64_t j0 = j_lo; j0 < j_hi; j0 += kKeyBlock) {  // key blocks
          const int64_t cols = std::min(j_hi, j0 + kKeyBlock) - j0;
          const float* kb = k.data() + g.k_at(b, j0, hk);
          const float* vb = v.data() + g.k_at(b, j0, hk);
          check_sgemm(dnnl_sgemm('N', 'T', rows, cols, g.D, scale, qb, ld_q, kb, ld_k, 0.0f, p.data(), cols));
          check_sgemm(
              dnnl_sgemm('N', 'T', rows, cols, g.D, 1.0f, dob, ld_q, vb, ld_k, 0.0f, dp.data(), cols));
          for (int64_t r = 0; r < rows; ++r) {  // P and dS = P (dP - delta) (1 - tanh^2) scale, in place
            const int64_t t = t0 + r;
            float* pr = p.data() + r * cols;
            float* dr = dp.data() + r * cols;
            const float l_t = lse_bh[t], delta_t = delta[size_t(t)];
            auto [c_lo, c_hi] = visible_columns(mask, t, j0, cols);
            if (l_t == -INFINITY) c_hi = c_lo;  // a row that sees no key
            std::fill(pr, pr + c_lo, 0.0f), std::fill(dr, dr + c_lo, 0.0f);
            std::fill(pr + c_hi, pr + cols, 0.0f), std::fill(dr + c_hi, dr + cols, 0.0f);
            if (cap == 0) {  // straight loops that vectorize
              for (int64_t j = c_lo; j < c_hi; ++j) pr[j] = exp_f32_within_2ulp(pr[j] - l_t);
              for (int64_t j = c_lo; j < c_hi; ++j) dr[j] = pr[j] * (dr[j] - delta_t) * scale;
            } else {
              for (int64_t j = c_lo; j < c_hi; ++j) {
                const float sc = cap * std::tanh(pr[j] / cap), th = sc / cap;
                pr[j] = exp_f32_within_2ulp(sc - l_t);
                dr[j] = pr[j] * (dr[j] - delta_t) * (1.0f - th * th) * scale;
              }
            }
            mask_segments(mask, t, j0, c_lo, c_hi, pr, 0.0f);
            mask_segments(mask, t, j0, c_lo, c_hi, dr, 0.0f);
          }
          check_sgemm(dnnl_sgemm('T', 'N', cols, g.D, rows, 1.0f, p.data(), cols, dob, ld_q, 1.0f,
                                 dvh + j0 * g.D, g.D));
          check_sgemm(
              dnnl_sgemm('N', 'N', rows, g.D, cols, 1.0f, dp.data(), cols, kb, ld_k, 1.0f, dqb, ld_q));
          check_sgemm(dnnl_sgemm('T', 'N', cols, g.D, rows, 1.0f, dp.data(), cols, qb, ld_q, 1.0f,
                                 dkh + j0 * g.D, g.D));
        }
      }
    }
  });
  if constexpr (!std::is_same_v<T, float>) {
    T* dq_out = outs[0].data<T>();
    parallel_for(int64_t(dq.size()), 1 << 16, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) dq_out[i] = narrow<T>(dq[size_t(i)]);
    });
  }
  T* dk_out = outs[1].data<T>();
  T* dv_out = outs[2].data<T>();
  parallel_for(g.B * g.Hkv * g.S, 256, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {  // (b, hk, j): the group's heads in order
      const int64_t b = r / (g.Hkv * g.S), hk = (r / g.S) % g.Hkv, j = r % g.S;
      for (int64_t d = 0; d < g.D; ++d) {
        float sk = 0, sv = 0;
        for (int64_t h = hk * g.group; h < (hk + 1) * g.group; ++h) {
          sk += dk_h[size_t(((b * g.H + h) * g.S + j) * g.D + d)];
          sv += dv_h[size_t(((b * g.H + h) * g.S + j) * g.D + d)];
        }
        dk_out[g.k_at(b, j, hk) + size_t(d)] = narrow<T>(sk);
        dv_out[g.k_at(b, j, hk) + size_t(d)] = narrow<T>(sv);
      }
    }
  });
  if (!sinks.empty()) {
    float* ds = outs[3].data<float>();
    for (int64_t h = 0; h < g.H; ++h) {
      float sum = 0;
      for (int64_t b = 0; b < g.B; ++b) sum += dsink_parts[size_t(b * g.H + h)];
      ds[h] = sum;
    }
  }
}

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

namespace dew::ops::DEW_KERNEL_NS {

// Registered as cpu.avx2.flash_gemm and cpu.avx512.flash_gemm.
void add_attention_flash_gemm(select::Registry<AttentionArgs>& r) {
  add_cpu_f32_bf16<AttentionArgs>(
      r,
      [](auto t, const AttentionArgs& a, std::vector<Tensor>& outs) {
        attention_flash_gemm<decltype(t)>(a, outs);
      },
      {}, "flash_gemm");
}

void add_attention_backward_flash_gemm(select::Registry<AttentionBackwardArgs>& r) {
  add_cpu_f32_bf16<AttentionBackwardArgs>(
      r,
      [](auto t, const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
        attention_backward_flash_gemm<decltype(t)>(a, outs);
      },
      {}, "flash_gemm");
}

}  // namespace dew::ops::DEW_KERNEL_NS
