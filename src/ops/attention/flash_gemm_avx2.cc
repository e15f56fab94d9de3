// attention forward as blocked GEMMs (cpu.flash_gemm): per (batch, head, block of 128 queries), key
// blocks of 256 go through oneDNN's sgemm (S = Q K^T, then O += P V) with the online softmax between
// them; masks cost only the blocks they cut. Each pool thread runs its GEMMs on one OpenMP thread, so
// oneDNN's team does not oversubscribe the pool. f32 and bf16 (widened once).
#define DEW_KERNEL_NS flash_gemm
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "ops/attention/kernels.h"

DEW_ISA_BEGIN
namespace dew::ops {
namespace {

constexpr int64_t kQueryBlock = 64, kKeyBlock = 256;

void check_sgemm(dnnl_status_t s) {
  DEW_REQUIRE(s == dnnl_success, "[attention] oneDNN sgemm failed with status {}", int(s));
}

template <class T>
void attention_flash_gemm(const AttentionArgs& a, std::vector<Tensor>& outs) {
  const AttentionOptions& o = a.options;
  const AttentionGeometry g(a.q, a.k, o);
  const float scale = float(g.scale), cap = float(g.cap);
  flash_gemm::Scratch<float> q = flash_gemm::widened<float, T>(a.q), k = flash_gemm::widened<float, T>(a.k),
                             v = flash_gemm::widened<float, T>(a.v);
  flash_gemm::Scratch<float> sinks =
      o.sinks.defined() ? flash_gemm::widened<float, float>(o.sinks) : flash_gemm::Scratch<float>();
  T* out = outs[0].data<T>();
  float* lse = outs[1].data<float>();
  const int64_t blocks = (g.T + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.B * g.H * blocks, 1, [&](int64_t w0, int64_t w1) {
    omp_set_num_threads(1);
    std::vector<float> s(size_t(kQueryBlock * kKeyBlock)), acc(size_t(kQueryBlock * g.D)), m(kQueryBlock),
        l(kQueryBlock);
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
        const float* kb = k.data() + g.k_at(b, j0, hk);
        const float* vb = v.data() + g.k_at(b, j0, hk);
        check_sgemm(dnnl_sgemm('N', 'T', rows, cols, g.D, scale, qb, g.H * g.D, kb, g.Hkv * g.D, 0.0f,
                               s.data(), cols));
        for (int64_t r = 0; r < rows; ++r) {  // online softmax, row by row
          float* sr = s.data() + r * cols;
          const int64_t t = t0 + r;
          auto [lo, hi] = mask.key_range(t);
          const bool all_visible = !mask.q_segments && lo <= j0 && hi >= j0 + cols;
          if (cap > 0)
            for (int64_t j = 0; j < cols; ++j) sr[j] = cap * std::tanh(sr[j] / cap);
          if (!all_visible)
            for (int64_t j = 0; j < cols; ++j)
              if (!mask.visible(t, j0 + j)) sr[j] = -INFINITY;
          float tile_max = -INFINITY;
          for (int64_t j = 0; j < cols; ++j) tile_max = sr[j] > tile_max ? sr[j] : tile_max;
          const float new_m = std::max(m[size_t(r)], tile_max);
          if (new_m == -INFINITY) {
            std::fill(sr, sr + cols, 0.0f);
            continue;
          }
          const float correction = flash_gemm::exp_f32(m[size_t(r)] - new_m);
          for (int64_t j = 0; j < cols; ++j) sr[j] = flash_gemm::exp_f32_within_2ulp(sr[j] - new_m);
          const float sum = flash_gemm::lane_sum<8, float>(
              cols, [&](int64_t j) { return sr[j]; });  // eight lanes: a sum the compiler vectorizes
          float* ar = acc.data() + r * g.D;
          for (int64_t d = 0; d < g.D; ++d) ar[d] *= correction;
          l[size_t(r)] = l[size_t(r)] * correction + sum;
          m[size_t(r)] = new_m;
        }
        check_sgemm(dnnl_sgemm('N', 'N', rows, g.D, cols, 1.0f, s.data(), cols, vb, g.Hkv * g.D, 1.0f,
                               acc.data(), g.D));
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r;
        float* ar = acc.data() + r * g.D;
        if (!sinks.empty()) {  // the sink joins the denominator with no value
          const float new_m = std::max(m[size_t(r)], sinks[size_t(h)]);
          const float correction = flash_gemm::exp_f32(m[size_t(r)] - new_m);
          for (int64_t d = 0; d < g.D; ++d) ar[d] *= correction;
          l[size_t(r)] = l[size_t(r)] * correction + flash_gemm::exp_f32(sinks[size_t(h)] - new_m);
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
  flash_gemm::Scratch<float> q = flash_gemm::widened<float, T>(a.q), k = flash_gemm::widened<float, T>(a.k),
                             v = flash_gemm::widened<float, T>(a.v),
                             dout = flash_gemm::widened<float, T>(a.dout),
                             out = flash_gemm::widened<float, T>(a.out),
                             lse = flash_gemm::widened<float, float>(a.lse);
  flash_gemm::Scratch<float> sinks =
      o.sinks.defined() ? flash_gemm::widened<float, float>(o.sinks) : flash_gemm::Scratch<float>();
  // Per query head: dq in place; dk and dv as partials summed over the group in head order below.
  flash_gemm::Scratch<float> dq(int64_t(q.size()), 0.0f), dk_h(g.B * g.H * g.S * g.D, 0.0f),
      dv_h(g.B * g.H * g.S * g.D, 0.0f);
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
        float d = 0;
        for (int64_t i = 0; i < g.D; ++i) d += dt[i] * ot[i];
        delta[size_t(t)] = d;
        if (!sinks.empty() && lse_bh[t] != -INFINITY)
          dsink_parts[size_t(w)] -= flash_gemm::exp_f32(sinks[size_t(h)] - lse_bh[t]) * d;
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
            const float l_t = lse_bh[t];
            auto [lo, hi] = mask.key_range(t);
            const bool all_visible = !mask.q_segments && lo <= j0 && hi >= j0 + cols && l_t != -INFINITY;
            const float delta_t = delta[size_t(t)];
            if (all_visible && cap == 0) {  // the common block: straight loops that vectorize
              for (int64_t j = 0; j < cols; ++j) pr[j] = flash_gemm::exp_f32_within_2ulp(pr[j] - l_t);
              for (int64_t j = 0; j < cols; ++j) dr[j] = pr[j] * (dr[j] - delta_t) * scale;
              continue;
            }
            for (int64_t j = 0; j < cols; ++j) {
              const float sc = cap > 0 ? cap * std::tanh(pr[j] / cap) : pr[j];
              const bool seen = all_visible || (l_t != -INFINITY && mask.visible(t, j0 + j));
              const float pj = seen ? flash_gemm::exp_f32_within_2ulp(sc - l_t) : 0.0f;
              const float th = cap > 0 ? sc / cap : 0.0f;
              pr[j] = pj;
              dr[j] = pj * (dr[j] - delta_t) * (1.0f - th * th) * scale;
            }
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
  T* dq_out = outs[0].data<T>();
  for (size_t i = 0; i < dq.size(); ++i) dq_out[i] = narrow<T>(dq[i]);
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
}  // namespace dew::ops
DEW_ISA_END

namespace dew::ops {

void add_attention_backward_flash_gemm(select::Registry<AttentionBackwardArgs>& r) {
  r.add({"cpu.flash_gemm",
         {select::on_cpu<AttentionBackwardArgs>(), select::cpu_has<AttentionBackwardArgs>(select::Isa::avx2),
          select::dtype_in<AttentionBackwardArgs>({DType::f32, DType::bf16})},
         [](const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             attention_backward_flash_gemm<float>(a, outs);
           else
             attention_backward_flash_gemm<bf16>(a, outs);
         }});
}

void add_attention_flash_gemm(select::Registry<AttentionArgs>& r) {
  r.add({"cpu.flash_gemm",
         {select::on_cpu<AttentionArgs>(), select::cpu_has<AttentionArgs>(select::Isa::avx2),
          select::dtype_in<AttentionArgs>({DType::f32, DType::bf16})},
         [](const AttentionArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32)
             attention_flash_gemm<float>(a, outs);
           else
             attention_flash_gemm<bf16>(a, outs);
         }});
}

}  // namespace dew::ops
