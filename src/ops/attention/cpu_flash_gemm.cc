// attention and its backward as blocked GEMMs (cpu.avx2.flash_gemm, cpu.avx512.flash_gemm: built once
// per tier, NOTE [instruction-set regions]): per (batch, head, block of 128 queries), key blocks (512 in
// the forward, 256 in the backward) go through oneDNN's sgemm (S = Q K^T, then O += P V) with the online
// softmax between them; masks cost only the blocks they cut. Each pool thread runs its GEMMs on one
// OpenMP thread, so oneDNN's team does not oversubscribe the pool. f32 and bf16 (queries widened once,
// keys and values per block). The backward runs the same blocks key block by key block.
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "ops/attention/kernels.h"
#include "ops/cpu_tier.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {
// Each pool chunk's sgemm calls run on one OpenMP thread (the pool already splits the work), and the
// calling thread gets its own count back: the main thread runs a chunk too, and every later oneDNN call
// from it (the step's GEMMs) would otherwise run on one thread.
class OneOpenMpThread {
 public:
  OneOpenMpThread() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneOpenMpThread() { omp_set_num_threads(previous_); }
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int previous_;
};

constexpr int64_t kQueryBlock = 128, kKeyBlock = 256;
// The forward's query blocks take keys 512 at a time: fewer, wider sgemm calls. The backward keeps 256:
// its two score blocks of 128 x 512 floats would fill a 512 KB L2.
constexpr int64_t kForwardKeyBlock = 512;

// NOTE [key blocks outside in the backward]
// The backward walks a head's key blocks in the outer loop and the query blocks that see each in the
// inner one (FlashAttention-2's order), so a key block's K, V, dK and dV (4 x 64 KB at D = 64) stay in
// L2 while the query blocks stream past; queries outside made every query block sweep all of a head's
// keys and their gradients (1 MB at T = 1024) from memory. dQ
// and dK/dV each still sum their blocks in ascending order.

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

// Key block j0 (cols keys) of KV head hk: f32 read in place; bf16 widened into the thread's buffers.
// Widening the whole of K and V per call would widen a decode step's whole cache, into fresh memory, at
// every step.
struct KeyBlock {
  const float *k, *v;
  int64_t ld;
};
template <class T>
KeyBlock key_block(const T* k, const T* v, const AttentionGeometry& g, int64_t b, int64_t hk, int64_t j0,
                   int64_t cols, std::vector<float>& k_block, std::vector<float>& v_block) {
  if constexpr (std::is_same_v<T, float>) {
    return {k + g.k_at(b, j0, hk), v + g.k_at(b, j0, hk), g.Hkv * g.D};
  } else {
    for (int64_t c = 0; c < cols; ++c) {
      row_as<float>(k + g.k_at(b, j0 + c, hk), g.D, k_block.data() + c * g.D);
      row_as<float>(v + g.k_at(b, j0 + c, hk), g.D, v_block.data() + c * g.D);
    }
    return {k_block.data(), v_block.data(), g.D};
  }
}

// NOTE [score rows on FloatVec]
// The softmax between the two GEMMs took about a sixth of the forward's time in its auto-vectorized
// scalar loops (max, exps, sum; perf), which cannot reach AVX-512's vscalefps (NOTE [one body for
// scalar and vector float functions]). Both tiers that build this file have a FloatVec, so a score
// row's max, exps and sum, and the backward's P and dS, run on it in one pass each.
#if !DEW_HAS_FLOAT_VEC
#error "flash_gemm is built only for tiers with a FloatVec"
#endif

// row[j] = exp(row[j] - m) for j in [0, n); returns their sum (kVecWidth lanes, then across them).
float exps_in_place(float* row, int64_t n, float m) {
  const FloatVec mv(m);
  FloatVec sum = 0.0f;
  int64_t j = 0;
  for (; j + kVecWidth <= n; j += kVecWidth) {
    const FloatVec e = exp_f32_within_2ulp(load_vec(row + j) - mv);
    store_vec(row + j, e);
    sum += e;
  }
  if (j < n) {  // the tail's other lanes read as 0, whose exp is not the row's
    const int tail = int(n - j);
    const FloatVec e = keep_first_lanes(exp_f32_within_2ulp(load_vec(row + j, tail) - mv), tail);
    store_vec(row + j, e, tail);
    sum += e;
  }
  return lanes_sum(sum);
}

// The backward's rows without a softcap: p[j] = exp(p[j] - lse) and d[j] = p[j] (d[j] - delta) scale
// for j in [0, n), in one pass.
void probabilities_and_score_gradients(float* p, float* d, int64_t n, float lse, float delta, float scale) {
  const FloatVec lse_v(lse), delta_v(delta), scale_v(scale);
  const auto step = [&](int64_t j, int lanes) __attribute__((always_inline)) {
    const FloatVec e = exp_f32_within_2ulp(load_vec(p + j, lanes) - lse_v);
    store_vec(p + j, e, lanes);
    store_vec(d + j, e * (load_vec(d + j, lanes) - delta_v) * scale_v, lanes);
  };
  int64_t j = 0;
  for (; j + kVecWidth <= n; j += kVecWidth) step(j, kVecWidth);
  if (j < n) step(j, int(n - j));
}

// The online softmax of query t over key block j0: its scores `sr` (cols) become probabilities
// relative to the running max m, and the running sum l and the accumulator row are rescaled.
void online_softmax(float* sr, int64_t cols, const AttentionMask& mask, int64_t t, int64_t j0, float cap,
                    float& m, float& l, float* acc_row, int64_t D) {
  const auto seen = visible_columns(mask, t, j0, cols);  // not a structured binding: a lambda uses it
  const int64_t c_lo = seen.first, c_hi = seen.second;
  if (cap > 0)
    for (int64_t j = c_lo; j < c_hi; ++j) sr[j] = cap * std::tanh(sr[j] / cap);
  mask_segments(mask, t, j0, c_lo, c_hi, sr, -INFINITY);
  const float tile_max = row_max_vec(sr + c_lo, c_hi - c_lo);  // NOTE [score rows on FloatVec]
  const float new_m = std::max(m, tile_max);
  if (new_m == -INFINITY) {
    std::fill(sr, sr + cols, 0.0f);
    return;
  }
  const float correction = exp_f32(m - new_m);
  std::fill(sr, sr + c_lo, 0.0f);
  std::fill(sr + c_hi, sr + cols, 0.0f);
  const float sum = exps_in_place(sr + c_lo, c_hi - c_lo, new_m);
  for (int64_t d = 0; d < D; ++d) acc_row[d] *= correction;
  l = l * correction + sum;
  m = new_m;
}

// A finished row: the sink (when there is one) joins the denominator with no value; out = acc / l and
// lse = m + log l (-inf for a row that saw nothing; its out is 0).
template <class T>
void finish_row(float* acc_row, float m, float l, const Scratch<float>& sinks, int64_t h, int64_t D,
                T* out_row, float& lse) {
  if (!sinks.empty()) {
    const float new_m = std::max(m, sinks[size_t(h)]);
    const float correction = exp_f32(m - new_m);
    for (int64_t d = 0; d < D; ++d) acc_row[d] *= correction;
    l = l * correction + exp_f32(sinks[size_t(h)] - new_m);
    m = new_m;
  }
  const float inv = l > 0 ? 1.0f / l : 0.0f;
  for (int64_t d = 0; d < D; ++d) out_row[d] = narrow<T>(acc_row[d] * inv);
  lse = l > 0 ? m + std::log(l) : -INFINITY;
}

// NOTE [heads first in the backward]
// The backward's GEMM operands Q, K, V and dO, and dQ, are copied, bf16 widened on the way, from
// [B,T,H,D] into [B,H,T,D] floats, each head's rows contiguous: a block of 128 or 256 rows of one head
// then spans 32-64 KB of consecutive memory instead of rows at a stride of H·D floats (a 128-row block
// over 384 KB and 96 pages at GPT-2's 768), which the sgemm calls' packing read five times a block
// pair; one pass over each tensor is cheaper. The forward, whose query block stays put across its key
// blocks, gains nothing from it and keeps the stored layout.
template <class T>
Scratch<float> heads_first(const Tensor& x) {  // (B,T,H,D) -> (B,H,T,D) floats
  const Tensor c = x.contiguous();
  const int64_t B = c.size(0), T_ = c.size(1), H = c.size(2), D = c.size(3);
  const T* p = c.data<T>();
  Scratch<float> out(c.numel());
  parallel_for(B * H * T_, std::max<int64_t>(1, 4096 / D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {  // r = (b, h, t)
      const int64_t b = r / (H * T_), h = (r / T_) % H, t = r % T_;
      const T* src = p + ((b * T_ + t) * H + h) * D;
      float* dst = out.data() + r * D;
      for (int64_t d = 0; d < D; ++d) dst[d] = widen<float>(src[d]);
    }
  });
  return out;
}

// What a forward call reads and writes, in the layout the kernels want: queries (and sinks) widened
// to f32 once, keys and values as stored (contiguous), the outputs.
template <class T>
struct ForwardCall {
  const AttentionOptions& o;
  AttentionGeometry g;
  float scale, cap;
  Scratch<float> q, sinks;
  Tensor k_tensor, v_tensor;
  const T *k, *v;
  T* out;
  float* lse;
  ForwardCall(const AttentionArgs& a, std::vector<Tensor>& outs)
      : o(a.options),
        g(a.q, a.k, a.options),
        scale(float(g.scale)),
        cap(float(g.cap)),
        q(widened<float, T>(a.q)),
        sinks(a.options.sinks.defined() ? widened<float, float>(a.options.sinks) : Scratch<float>()),
        k_tensor(a.k.contiguous()),
        v_tensor(a.v.contiguous()),
        k(k_tensor.data<T>()),
        v(v_tensor.data<T>()),
        out(outs[0].data<T>()),
        lse(outs[1].data<float>()) {}
};

// A decode step (one query per row): per (batch, KV head), the `group` query heads that share it go
// over its keys together, so each key block is read — and, for bf16, widened — once for all of them
// instead of once per query head; scores are dot products, values axpys (no GEMM call per head and
// key block).
template <class T>
void attention_decode_step(const ForwardCall<T>& c) {
  const AttentionGeometry& g = c.g;
  const int64_t G = g.group;
  parallel_for(g.B * g.Hkv, 1, [&](int64_t w0, int64_t w1) {
    std::vector<float> s(size_t(G * kKeyBlock)), acc(size_t(G * g.D)), m(static_cast<size_t>(G)),
        l(static_cast<size_t>(G));
    std::vector<float> k_block(std::is_same_v<T, float> ? 0 : size_t(kKeyBlock * g.D)),
        v_block(k_block.size());
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / g.Hkv, hk = w % g.Hkv;
      const AttentionMask mask = attention_mask(c.o, g.T, g.S, b, c.o.q_segments, c.o.k_segments);
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.0f);
      const auto [j_lo, j_hi] = mask.key_range(0);
      for (int64_t j0 = j_lo; j0 < j_hi; j0 += kKeyBlock) {  // key blocks
        const int64_t cols = std::min(j_hi, j0 + kKeyBlock) - j0;
        const KeyBlock kv = key_block(c.k, c.v, g, b, hk, j0, cols, k_block, v_block);
        for (int64_t r = 0; r < G; ++r) {  // the query heads of this KV head
          const float* qr = c.q.data() + g.q_at(b, 0, hk * G + r);
          float* sr = s.data() + r * cols;
          for (int64_t j = 0; j < cols; ++j)
            sr[j] = c.scale *
                    lane_sum<kLanes, float>(g.D, [&](int64_t d) { return qr[d] * kv.k[j * kv.ld + d]; });
          online_softmax(sr, cols, mask, 0, j0, c.cap, m[size_t(r)], l[size_t(r)], acc.data() + r * g.D, g.D);
        }
        for (int64_t j = 0; j < cols; ++j)  // each value row once, into every head's accumulator
          for (int64_t r = 0; r < G; ++r) {
            const float p = s[size_t(r * cols + j)];
            float* ar = acc.data() + r * g.D;
            for (int64_t d = 0; d < g.D; ++d) ar[d] += p * kv.v[j * kv.ld + d];
          }
      }
      for (int64_t r = 0; r < G; ++r) {
        const int64_t h = hk * G + r;
        finish_row(acc.data() + r * g.D, m[size_t(r)], l[size_t(r)], c.sinks, h, g.D, c.out + g.q_at(b, 0, h),
                   c.lse[b * g.H + h]);
      }
    }
  });
}

// Blocks of up to 128 queries per (batch, head), keys 512 at a time: S = Q K^T and O += P V through
// oneDNN's sgemm.
template <class T>
void attention_query_blocks(const ForwardCall<T>& c) {
  const AttentionGeometry& g = c.g;
  const int64_t blocks = (g.T + kQueryBlock - 1) / kQueryBlock;
  parallel_for(g.B * g.H * blocks, 1, [&](int64_t w0, int64_t w1) {
    const OneOpenMpThread one_thread;
    const int64_t most_rows = std::min(g.T, kQueryBlock);
    std::vector<float> s(size_t(most_rows * kForwardKeyBlock)), acc(size_t(most_rows * g.D)),
        m(static_cast<size_t>(most_rows)), l(static_cast<size_t>(most_rows));
    std::vector<float> k_block(std::is_same_v<T, float> ? 0 : size_t(kForwardKeyBlock * g.D)),
        v_block(k_block.size());
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / (g.H * blocks), h = (w / blocks) % g.H, t0 = (w % blocks) * kQueryBlock;
      const int64_t t1 = std::min(g.T, t0 + kQueryBlock), rows = t1 - t0, hk = h / g.group;
      const AttentionMask mask = attention_mask(c.o, g.T, g.S, b, c.o.q_segments, c.o.k_segments);
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.0f);
      const int64_t j_lo = mask.key_range(t0).first, j_hi = mask.key_range(t1 - 1).second;
      const float* qb = c.q.data() + g.q_at(b, t0, h);
      for (int64_t j0 = j_lo; j0 < j_hi; j0 += kForwardKeyBlock) {  // key blocks
        const int64_t cols = std::min(j_hi, j0 + kForwardKeyBlock) - j0;
        const KeyBlock kv = key_block(c.k, c.v, g, b, hk, j0, cols, k_block, v_block);
        check_sgemm(
            dnnl_sgemm('N', 'T', rows, cols, g.D, c.scale, qb, g.H * g.D, kv.k, kv.ld, 0.0f, s.data(), cols));
        for (int64_t r = 0; r < rows; ++r)  // online softmax, row by row
          online_softmax(s.data() + r * cols, cols, mask, t0 + r, j0, c.cap, m[size_t(r)], l[size_t(r)],
                         acc.data() + r * g.D, g.D);
        check_sgemm(
            dnnl_sgemm('N', 'N', rows, g.D, cols, 1.0f, s.data(), cols, kv.v, kv.ld, 1.0f, acc.data(), g.D));
      }
      for (int64_t r = 0; r < rows; ++r)
        finish_row(acc.data() + r * g.D, m[size_t(r)], l[size_t(r)], c.sinks, h, g.D,
                   c.out + g.q_at(b, t0 + r, h), c.lse[(b * g.H + h) * g.T + t0 + r]);
    }
  });
}

template <class T>
void attention_flash_gemm(const AttentionArgs& a, std::vector<Tensor>& outs) {
  const ForwardCall<T> call(a, outs);
  if (call.g.T == 1)
    attention_decode_step(call);
  else
    attention_query_blocks(call);
}

template <class T>
void attention_backward_flash_gemm(const AttentionBackwardArgs& a, std::vector<Tensor>& outs) {
  const AttentionOptions& o = a.options;
  const AttentionGeometry g(a.q, a.k, o);
  const float scale = float(g.scale), cap = float(g.cap);
  // NOTE [heads first in the backward]: q, k, v, dout and dq by head; out (read for delta) as stored.
  Scratch<float> q = heads_first<T>(a.q), k = heads_first<T>(a.k), v = heads_first<T>(a.v),
                 dout = heads_first<T>(a.dout), out = widened<float, T>(a.out),
                 lse = widened<float, float>(a.lse);
  const auto q_head = [&](int64_t b, int64_t t, int64_t h) {
    return size_t(((b * g.H + h) * g.T + t) * g.D);
  };
  const auto k_head = [&](int64_t b, int64_t j, int64_t hk) {
    return size_t(((b * g.Hkv + hk) * g.S + j) * g.D);
  };
  Scratch<float> sinks = o.sinks.defined() ? widened<float, float>(o.sinks) : Scratch<float>();
  // Per query head: dq by head, copied out at the end; dk and dv as partials summed over the group in
  // head order below.
  Scratch<float> dq(int64_t(q.size()), 0.0f);
  Scratch<float> dk_h(g.B * g.H * g.S * g.D, 0.0f), dv_h(g.B * g.H * g.S * g.D, 0.0f);
  std::vector<float> dsink_parts(size_t(g.B * g.H), 0.0f);
  const int64_t ld_q = g.D, ld_k = g.D;
  parallel_for(g.B * g.H, 1, [&](int64_t w0, int64_t w1) {
    const OneOpenMpThread one_thread;
    std::vector<float> p(size_t(kQueryBlock * kKeyBlock)), dp(p.size()), delta(size_t(g.T));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t b = w / g.H, h = w % g.H, hk = h / g.group;
      AttentionMask mask = attention_mask(o, g.T, g.S, b, o.q_segments, o.k_segments);
      const float* lse_bh = lse.data() + (b * g.H + h) * g.T;
      for (int64_t t = 0; t < g.T; ++t) {  // delta_t = sum_d dout * out
        const float* dt = dout.data() + q_head(b, t, h);
        const float* ot = out.data() + g.q_at(b, t, h);
        const float d = dot<kLanes, float>(dt, ot, g.D);
        delta[size_t(t)] = d;
        if (!sinks.empty() && lse_bh[t] != -INFINITY)
          dsink_parts[size_t(w)] -= exp_f32(sinks[size_t(h)] - lse_bh[t]) * d;
      }
      float* dkh = dk_h.data() + size_t((b * g.H + h) * g.S * g.D);
      float* dvh = dv_h.data() + size_t((b * g.H + h) * g.S * g.D);
      // NOTE [key blocks outside in the backward]
      for (int64_t k0 = 0; k0 < g.S; k0 += kKeyBlock) {
        const int64_t k1 = std::min(g.S, k0 + kKeyBlock);
        for (int64_t t0 = 0; t0 < g.T; t0 += kQueryBlock) {  // the query blocks that see this key block
          const int64_t t1 = std::min(g.T, t0 + kQueryBlock), rows = t1 - t0;
          const int64_t j0 = std::max(k0, mask.key_range(t0).first);
          const int64_t cols = std::min(k1, mask.key_range(t1 - 1).second) - j0;
          if (cols <= 0) continue;
          const float* qb = q.data() + q_head(b, t0, h);
          const float* dob = dout.data() + q_head(b, t0, h);
          float* dqb = dq.data() + q_head(b, t0, h);
          const float* kb = k.data() + k_head(b, j0, hk);
          const float* vb = v.data() + k_head(b, j0, hk);
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
            if (cap == 0) {  // NOTE [score rows on FloatVec]
              probabilities_and_score_gradients(pr + c_lo, dr + c_lo, c_hi - c_lo, l_t, delta_t, scale);
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
  T* dq_out = outs[0].data<T>();
  parallel_for(g.B * g.T * g.H, std::max<int64_t>(1, 4096 / g.D), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {  // r = (b, t, h): dq back into (B,T,H,D)
      const int64_t b = r / (g.T * g.H), t = (r / g.H) % g.T, h = r % g.H;
      const float* src = dq.data() + q_head(b, t, h);
      T* dst = dq_out + r * g.D;
      for (int64_t d = 0; d < g.D; ++d) dst[d] = narrow<T>(src[d]);
    }
  });
  T* dk_out = outs[1].data<T>();
  T* dv_out = outs[2].data<T>();
  parallel_for(g.B * g.Hkv * g.S, 256, [&](int64_t r0, int64_t r1) {
    std::vector<float> sk(size_t(g.D)), sv(size_t(g.D));
    for (int64_t r = r0; r < r1; ++r) {  // (b, hk, j): the group's heads in order, a row of D at a time
      const int64_t b = r / (g.Hkv * g.S), hk = (r / g.S) % g.Hkv, j = r % g.S;
      std::fill(sk.begin(), sk.end(), 0.0f), std::fill(sv.begin(), sv.end(), 0.0f);
      for (int64_t h = hk * g.group; h < (hk + 1) * g.group; ++h) {
        const float* dkr = dk_h.data() + size_t(((b * g.H + h) * g.S + j) * g.D);
        const float* dvr = dv_h.data() + size_t(((b * g.H + h) * g.S + j) * g.D);
        for (int64_t d = 0; d < g.D; ++d) sk[size_t(d)] += dkr[d], sv[size_t(d)] += dvr[d];
      }
      T* dkj = dk_out + g.k_at(b, j, hk);
      T* dvj = dv_out + g.k_at(b, j, hk);
      for (int64_t d = 0; d < g.D; ++d) dkj[d] = narrow<T>(sk[size_t(d)]), dvj[d] = narrow<T>(sv[size_t(d)]);
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
