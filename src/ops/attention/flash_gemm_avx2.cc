// attention forward as blocked GEMMs (cpu.flash_gemm): per (batch, head, block of 128 queries), key
// blocks of 256 go through oneDNN's sgemm (S = Q K^T, then O += P V) with the online softmax between
// them; masks cost only the blocks they cut. Each pool thread runs its GEMMs on one OpenMP thread, so
// oneDNN's team does not oversubscribe the pool. f32 and bf16 (widened once).
#define DEW_KERNEL_NS flash_gemm
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "ops/attention/kernels.h"

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
  std::vector<float> q = flash_gemm::widened<float, T>(a.q), k = flash_gemm::widened<float, T>(a.k),
                     v = flash_gemm::widened<float, T>(a.v);
  std::vector<float> sinks = o.sinks.defined() ? flash_gemm::widened<float, float>(o.sinks) : std::vector<float>();
  T* out = outs[0].data<T>();
  float* lse = outs[1].data<float>();
  const int64_t blocks = (g.T + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.B * g.H * blocks, 1, [&](int64_t w0, int64_t w1) {
    omp_set_num_threads(1);
    std::vector<float> s(size_t(kQueryBlock * kKeyBlock)), acc(size_t(kQueryBlock * g.D)), m(kQueryBlock), l(kQueryBlock);
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
        check_sgemm(dnnl_sgemm('N', 'T', rows, cols, g.D, scale, qb, g.H * g.D, kb, g.Hkv * g.D, 0.0f, s.data(), cols));
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
          const float sum = flash_gemm::lane_sum<8>(sr, cols);  // eight lanes: a sum the compiler vectorizes
          float* ar = acc.data() + r * g.D;
          for (int64_t d = 0; d < g.D; ++d) ar[d] *= correction;
          l[size_t(r)] = l[size_t(r)] * correction + sum;
          m[size_t(r)] = new_m;
        }
        check_sgemm(dnnl_sgemm('N', 'N', rows, g.D, cols, 1.0f, s.data(), cols, vb, g.Hkv * g.D, 1.0f, acc.data(), g.D));
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

}  // namespace

void add_attention_flash_gemm(select::Registry<AttentionArgs>& r) {
  r.add({"cpu.flash_gemm",
         {select::on_cpu<AttentionArgs>(), select::cpu_has_avx2<AttentionArgs>(),
          select::dtype_in<AttentionArgs>({DType::f32, DType::bf16})},
         [](const AttentionArgs& a, std::vector<Tensor>& outs) {
           if (a.dtype() == DType::f32) attention_flash_gemm<float>(a, outs);
           else attention_flash_gemm<bf16>(a, outs);
         }});
}

}  // namespace dew::ops
