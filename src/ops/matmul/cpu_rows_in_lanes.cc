// matmul for a decode batch's rows against weights stored as nn.Linear has them, Y = X W^T with W (N,K),
// f32 on AVX-512: the rows lie along the vector lanes (x transposed once per call into (K, 16 MV)) and
// each weight is broadcast against them, NW weight rows at a time — NW x MV accumulators, no sums
// across lanes, every weight read once per call (docs/perf.md, "Serving"). Each output is one
// accumulation over K in order, so it does not depend on the rows that come with it either; but it is
// not the dot tiles' order, so batch-invariant serving keeps to the tiles. A gated unit (options.glu,
// no bias or scale) is computed from the accumulators: each block takes NW / 2 gate rows and the NW / 2
// up rows of the same hidden units.
#include <dew/runtime.h>

#include "core/pacing.h"
#include "ops/cpu_tier.h"
#include "ops/glu/kernels.h"
#include "ops/kernel_types.h"
#include "ops/matmul/cpu_epilogue.h"
#include "ops/matmul/matmul.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_HAS_F32X16
constexpr int64_t kLanes = 16;

// buf (NW, 16 MV) = the NW weight rows `rows` against the transposed rows xt (K, 16 MV); with a gated
// unit (Glu not none), buf (NW / 2, 16 MV) = act(the first half's) * the second half's, as the glu op
// computes it. The next block's rows `next` are asked for line by line as these advance, a block ahead:
// asked only a few lines ahead of their use, weights coming from memory ran at 70-85% of their rate
// from L3 (docs/perf.md, "Serving"). They are asked into L2 only: rows 4 KB apart (K = 1024) fall in
// one L1 set, which the current block's rows already fill.
template <int MV, int NW, Activation Glu = Activation::none>
[[gnu::always_inline]] inline void broadcast_block(const float* xt, const float* const (&rows)[NW],
                                                   const float* const (&next)[NW], int64_t K, float* buf) {
  constexpr int64_t Mp = MV * kLanes;
  F32x16 acc[NW][MV];
  for (int j = 0; j < NW; ++j)
    for (int v = 0; v < MV; ++v) acc[j][v] = 0.0f;
  for (int64_t k0 = 0; k0 < K; k0 += kLanes) {
    // The weight rows' next lines on their way while these 16 steps run.
    for (int j = 0; j < NW; ++j) {
      __builtin_prefetch(rows[j] + k0 + 2 * kLanes, 0, 3);
      __builtin_prefetch(next[j] + k0, 0, 2);
    }
    const int64_t k1 = std::min(K, k0 + kLanes);
    for (int64_t k = k0; k < k1; ++k) {
      F32x16 xv[MV];
      for (int v = 0; v < MV; ++v) xv[v] = load_vec(xt + k * Mp + v * kLanes);
      for (int j = 0; j < NW; ++j) {
        const F32x16 b(rows[j][k]);
        for (int v = 0; v < MV; ++v) acc[j][v] = mul_add(xv[v], b, acc[j][v]);
      }
    }
  }
  if constexpr (Glu != Activation::none) {
    constexpr int H = NW / 2;
    for (int j = 0; j < H; ++j)
      for (int v = 0; v < MV; ++v)
        store_vec(buf + j * Mp + v * kLanes, act<Glu, true>(acc[j][v]) * acc[H + j][v]);
  } else {
    for (int j = 0; j < NW; ++j)
      for (int v = 0; v < MV; ++v) store_vec(buf + j * Mp + v * kLanes, acc[j][v]);
  }
}

// xt (K, Mp) = x (M, K) transposed, lanes M to Mp of each zero: 16 x 16 blocks transposed in registers
// by four stages of swaps (the stage of distance d swaps the off-diagonal d x d blocks of each 2d x 2d).
void transpose_rows(const float* x, int64_t M, int64_t K, float* xt, int64_t Mp) {
  alignas(64) int32_t low[4][16], high[4][16];
  for (int s = 0; s < 4; ++s) {
    const int d = 8 >> s;
    for (int l = 0; l < 16; ++l) {
      low[s][l] = (l & d) == 0 ? l : 16 + l - d;
      high[s][l] = (l & d) == 0 ? l + d : 16 + l;
    }
  }
  for (int64_t m0 = 0; m0 < Mp; m0 += kLanes)
    for (int64_t k0 = 0; k0 < K; k0 += kLanes) {
      const int64_t cols = std::min(kLanes, K - k0);
      const __mmask16 live = __mmask16((1u << cols) - 1);
      __m512 r[16];
      for (int i = 0; i < 16; ++i)
        r[i] = m0 + i < M ? _mm512_maskz_loadu_ps(live, x + (m0 + i) * K + k0) : _mm512_setzero_ps();
      for (int s = 0; s < 4; ++s) {
        const int d = 8 >> s;
        const __m512i lo = _mm512_load_si512(low[s]), hi = _mm512_load_si512(high[s]);
        for (int i = 0; i < 16; ++i) {
          if (i & d) continue;
          const __m512 a = r[i], b = r[i + d];
          r[i] = _mm512_permutex2var_ps(a, lo, b);
          r[i + d] = _mm512_permutex2var_ps(a, hi, b);
        }
      }
      for (int64_t j = 0; j < cols; ++j) _mm512_store_ps(xt + (k0 + j) * Mp + m0, r[j]);
    }
}

// With Glu, block b's outputs are hidden units b H to b H + H - 1 (H = NW / 2): gate rows n and up rows
// F + n of the weights, F = N / 2 outputs a row.
template <int MV, Activation Glu = Activation::none>
void rows_in_lanes(const MatmulArgs& args, Tensor& out) {
  constexpr int NW = MV == 1 ? 16 : 24 / MV;                // 16 to 24 accumulators, the operands in the rest
  constexpr int H = Glu == Activation::none ? NW : NW / 2;  // outputs a block
  constexpr int64_t Mp = MV * kLanes;
  const int64_t K = args.a.size(-1), M = args.a.numel() / K;
  const int64_t N = Glu == Activation::none ? args.b.size(-2) : args.b.size(-2) / 2;  // outputs a row
  const Tensor x_tensor = args.a.contiguous();
  const float* x = x_tensor.data<float>();
  const float* w = args.b.data<float>();
  MatmulArgs stored = args;  // the epilogue's options: the gated unit is computed with the products
  stored.options.glu = false;
  if constexpr (Glu != Activation::none) stored.options.activation = Activation::none;
  const CpuEpilogue<float> epilogue(stored, out, N);
  const int64_t blocks = (N + H - 1) / H;
  // NOTE [a transposition per thread]: each chunk of blocks (one per thread) transposes x into its own
  // part of one buffer, which the same thread writes and reads at every call: one transposition read by
  // the other thread cost the transfer of every line of it between the cores. The chunks are paced
  // (NOTE [paced ranges]): a block's outputs are the same whichever thread computes them.
  constexpr int64_t kGrain = 2;  // blocks a thread takes at least: a transposition pays for them
  Scratch<float> xts(paced_chunks(blocks, kGrain) * K * Mp);  // lanes past M: zeros, computed and dropped
  static Pacing pacing;
  parallel_for_paced(pacing, blocks, kGrain, [&](int c, int64_t b0, int64_t b1) {
    alignas(64) float buf[NW * Mp];
    // Block b's weight rows (with Glu, its gate rows then its up rows); a tail repeats its last row.
    const auto block_rows = [&](int64_t b, const float*(&rows)[NW]) {
      const int64_t n0 = std::min(b, blocks - 1) * H, cols = std::min<int64_t>(H, N - n0);
      for (int j = 0; j < NW; ++j)
        rows[j] = w + ((j < H ? 0 : N) + n0 + std::min<int64_t>(j % H, cols - 1)) * K;
    };
    float* xt = xts.data() + c * K * Mp;
    transpose_rows(x, M, K, xt, Mp);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n0 = b * H, cols = std::min<int64_t>(H, N - n0);
      const float *rows[NW], *next[NW];
      block_rows(b, rows);
      block_rows(b + 1, next);
      broadcast_block<MV, NW, Glu>(xt, rows, next, K, buf);
      for (int64_t m = 0; m < M; ++m) epilogue.store_row(m, n0, buf + m, Mp, cols);
    }
  });
}

template <Activation Glu>
void run_rows_in_lanes(const MatmulArgs& args, Tensor& out) {
  const int64_t K = args.a.size(-1), M = args.a.numel() / K;
  switch ((M + kLanes - 1) / kLanes) {
    case 1:
      return rows_in_lanes<1, Glu>(args, out);
    case 2:
      return rows_in_lanes<2, Glu>(args, out);
    case 3:
      return rows_in_lanes<3, Glu>(args, out);
    default:
      return rows_in_lanes<4, Glu>(args, out);
  }
}

// A gated unit from the accumulators where it is the whole epilogue, else after the product.
void run_rows_in_lanes_gated(const MatmulArgs& args, Tensor& out) {
  const MatmulOptions& o = args.options;
  if (!o.glu || o.bias.defined() || o.scale != 1)
    return with_activation_after(args, out, run_rows_in_lanes<Activation::none>);
  switch (o.activation) {
    case Activation::silu:
      return run_rows_in_lanes<Activation::silu>(args, out);
    case Activation::gelu_erf:
      return run_rows_in_lanes<Activation::gelu_erf>(args, out);
    default:
      return run_rows_in_lanes<Activation::gelu_tanh>(args, out);
  }
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [rows in lanes]: x's transposition is paid once a call by each thread; with fewer
// than 256 weight rows (a decode step's k and v projections) it outweighs the broadcasts' gain, and the
// dot tiles run those faster (docs/perf.md, "Serving").

void add_matmul_rows_in_lanes_cpu(select::Registry<MatmulArgs>& r) {
#if DEW_HAS_F32X16
  r.add(
      {std::string(kCpuImplName) + ".rows_in_lanes",
       {select::on_cpu<MatmulArgs>(), cpu_has_tier<MatmulArgs>(), select::dtype_in<MatmulArgs>({DType::f32}),
        select::requires_that<MatmulArgs>(
            "9 to 64 rows of a against at least 256 contiguous (N,K) rows of b, transposed (NOTE [rows in "
            "lanes])",
            [](const MatmulArgs& a) {
              const int64_t K = a.a.size(-1), M = a.a.numel() / std::max<int64_t>(1, K);
              return !a.options.transpose_a && a.options.transpose_b && a.b.dim() == 2 &&
                     a.b.is_contiguous() && M >= 9 && M <= 64 && a.b.size(0) >= 256;
            },
            [](const MatmulArgs& a) {
              return fmt::format("a is {} and b is {}{}", a.a.describe(), a.b.describe(),
                                 a.options.transpose_b ? "" : " (not transposed)");
            })},
       [](const MatmulArgs& a, std::vector<Tensor>& outs) { run_rows_in_lanes_gated(a, outs[0]); }});
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
