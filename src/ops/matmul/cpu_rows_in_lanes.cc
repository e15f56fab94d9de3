// matmul for a decode batch's rows against weights stored as nn.Linear has them, Y = X W^T with W (N,K),
// f32 on AVX-512: the rows lie along the vector lanes (x transposed once per call into (K, 16 MV)) and
// each weight is broadcast against them, NW weight rows at a time — NW x MV accumulators, no sums
// across lanes, every weight read once per call (docs/perf.md, "Serving"). Each output is one
// accumulation over K in order, so it does not depend on the rows that come with it either; but it is
// not the dot tiles' order, so batch-invariant serving keeps to the tiles.
#include <dew/runtime.h>

#include "ops/cpu_tier.h"
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

// buf (NW, 16 MV) = the NW weight rows `rows` against the transposed rows xt (K, 16 MV).
template <int MV, int NW>
[[gnu::always_inline]] inline void broadcast_block(const float* xt, const float* const (&rows)[NW], int64_t K,
                                                   float* buf) {
  constexpr int64_t Mp = MV * kLanes;
  F32x16 acc[NW][MV];
  for (int j = 0; j < NW; ++j)
    for (int v = 0; v < MV; ++v) acc[j][v] = 0.0f;
  for (int64_t k0 = 0; k0 < K; k0 += kLanes) {
    // The weight rows' next lines on their way while these 16 steps run.
    for (int j = 0; j < NW; ++j) __builtin_prefetch(rows[j] + k0 + 4 * kLanes, 0, 3);
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
  for (int j = 0; j < NW; ++j)
    for (int v = 0; v < MV; ++v) store_vec(buf + j * Mp + v * kLanes, acc[j][v]);
}

template <int MV>
void rows_in_lanes(const MatmulArgs& args, Tensor& out) {
  constexpr int NW = MV == 1 ? 16 : 24 / MV;  // 16 to 24 accumulators, the operands in the rest
  constexpr int64_t Mp = MV * kLanes;
  const int64_t K = args.a.size(-1), N = args.b.size(-2), M = args.a.numel() / K;
  const Tensor x_tensor = args.a.contiguous();
  const float* x = x_tensor.data<float>();
  // x transposed by gathers, 16 rows of a column at a time; rows past M are zeros: their lanes are
  // computed and dropped.
  Scratch<float> xt(K * Mp);
  for (int v = 0; v < MV; ++v) {
    const int64_t m0 = v * kLanes, rows = std::clamp<int64_t>(M - m0, 0, kLanes);
    const __mmask16 live = __mmask16((1u << rows) - 1);
    const __m512i at = _mm512_mullo_epi32(
        _mm512_add_epi32(_mm512_set1_epi32(int(m0)),
                         _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
        _mm512_set1_epi32(int(K)));
    for (int64_t k = 0; k < K; ++k)
      _mm512_store_ps(xt.data() + k * Mp + m0,
                      _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, at, x + k, 4));
  }
  const float* w = args.b.data<float>();
  const CpuEpilogue<float> epilogue(args, out, N);
  const int64_t blocks = (N + NW - 1) / NW;
  parallel_for(blocks, 2, [&](int64_t b0, int64_t b1) {
    alignas(64) float buf[NW * Mp];
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n0 = b * NW, cols = std::min<int64_t>(NW, N - n0);
      const float* rows[NW];
      for (int j = 0; j < NW; ++j) rows[j] = w + (n0 + std::min<int64_t>(j, cols - 1)) * K;  // a tail repeats
      broadcast_block<MV, NW>(xt.data(), rows, K, buf);
      for (int64_t m = 0; m < M; ++m) epilogue.store_row(m, n0, buf + m, Mp, cols);
    }
  });
}

void run_rows_in_lanes(const MatmulArgs& args, Tensor& out) {
  const int64_t K = args.a.size(-1), M = args.a.numel() / K;
  switch ((M + kLanes - 1) / kLanes) {
    case 1:
      return rows_in_lanes<1>(args, out);
    case 2:
      return rows_in_lanes<2>(args, out);
    case 3:
      return rows_in_lanes<3>(args, out);
    default:
      return rows_in_lanes<4>(args, out);
  }
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

void add_matmul_rows_in_lanes_cpu(select::Registry<MatmulArgs>& r) {
#if DEW_HAS_F32X16
  r.add(
      {std::string(kCpuImplName) + ".rows_in_lanes",
       {select::on_cpu<MatmulArgs>(), cpu_has_tier<MatmulArgs>(), select::dtype_in<MatmulArgs>({DType::f32}),
        select::requires_that<MatmulArgs>(
            "9 to 64 rows of a against the contiguous (N,K) rows of b, transposed",
            [](const MatmulArgs& a) {
              const int64_t K = a.a.size(-1), M = a.a.numel() / std::max<int64_t>(1, K);
              return !a.options.transpose_a && a.options.transpose_b && a.b.dim() == 2 &&
                     a.b.is_contiguous() && M >= 9 && M <= 64;
            },
            [](const MatmulArgs& a) {
              return fmt::format("a is {} and b is {}{}", a.a.describe(), a.b.describe(),
                                 a.options.transpose_b ? "" : " (not transposed)");
            })},
       [](const MatmulArgs& a, std::vector<Tensor>& outs) { run_rows_in_lanes(a, outs[0]); }});
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
