// matmul for a few rows against weights stored as nn.Linear has them, Y = X W^T with W (N,K), for each
// CPU tier (NOTE [instruction-set regions]): tiles of MR rows of X by NR rows of W, each output one
// vector accumulator along K, so a tile loads MR + NR vectors for MR x NR fused multiply-adds, where a
// row-at-a-time dot loads two per one. A library GEMM packs and blocks for many rows; at a decode batch
// of 2 to 16 rows it runs far below the machine's rate (docs/perf.md, "Serving").
// NOTE [rows one at a time]: every output is the same sequence of operations whatever the tile it falls
// in — one accumulator from zero over K in vector steps, the tail masked, then its lanes summed — so a
// row's result does not depend on how many rows come with it (serving's batch-invariant mode pins this
// kernel for every product).
#include <dew/runtime.h>

#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/matmul/cpu_epilogue.h"
#include "ops/matmul/matmul.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/lanes.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_HAS_FLOAT_VEC
// AVX-512's 32 registers hold 4 x 4 accumulators with their operands; AVX2's 16 hold 2 x 4.
inline constexpr int kTileRows = kVecWidth == 16 ? 4 : 2, kTileCols = 4;

// dots[m][n] = x_m . w_n for MR rows of x (widened, row stride K) and NR rows of w.
template <int MR, int NR, class T>
[[gnu::always_inline]] inline void dot_tile(const float* x, const T* w, int64_t K,
                                            float (&dots)[kTileRows][kTileCols]) {
  constexpr int64_t W = kVecWidth;
  FloatVec acc[MR][NR];
  for (int m = 0; m < MR; ++m)
    for (int n = 0; n < NR; ++n) acc[m][n] = 0.0f;
  int64_t k = 0;
  for (; k + W <= K; k += W) {
    FloatVec xv[MR];
    for (int m = 0; m < MR; ++m) xv[m] = load_vec(x + m * K + k);
    for (int n = 0; n < NR; ++n) {
      const FloatVec wv = load_vec(w + n * K + k);
      for (int m = 0; m < MR; ++m) acc[m][n] = mul_add(xv[m], wv, acc[m][n]);
    }
  }
  if (k < K) {
    const int lanes = int(K - k);
    FloatVec xv[MR];
    for (int m = 0; m < MR; ++m) xv[m] = load_vec(x + m * K + k, lanes);
    for (int n = 0; n < NR; ++n) {
      const FloatVec wv = load_vec(w + n * K + k, lanes);
      for (int m = 0; m < MR; ++m) acc[m][n] = mul_add(xv[m], wv, acc[m][n]);
    }
  }
  if constexpr (MR == kTileRows && NR == kTileCols) {  // a whole tile: one vector of sums, the same bits
    static_assert(kTileRows * kTileCols == kVecWidth);
    FloatVec all[kVecWidth];
    for (int m = 0; m < MR; ++m)
      for (int n = 0; n < NR; ++n) all[m * NR + n] = acc[m][n];
    store_vec(&dots[0][0], lanes_sums(all));
  } else {
    for (int m = 0; m < MR; ++m)
      for (int n = 0; n < NR; ++n) dots[m][n] = lanes_sum(acc[m][n]);
  }
}

template <int NR, class T>
void dot_rows(int rows, const float* x, const T* w, int64_t K, float (&dots)[kTileRows][kTileCols]) {
  if constexpr (kTileRows == 4) {
    if (rows == 4) return dot_tile<4, NR>(x, w, K, dots);
    if (rows == 3) return dot_tile<3, NR>(x, w, K, dots);
  }
  if (rows == 2) return dot_tile<2, NR>(x, w, K, dots);
  dot_tile<1, NR>(x, w, K, dots);
}

// Part `part` of `parts` of the cache lines of [p, p + bytes), asked into L1 ahead of their use.
inline void prefetch_part(const void* p, int64_t bytes, int64_t part, int64_t parts) {
  const int64_t lines = (bytes + 63) / 64;
  const char* c = static_cast<const char*>(p);
  for (int64_t l = lines * part / parts; l < lines * (part + 1) / parts; ++l)
    __builtin_prefetch(c + l * 64, 0, 3);
}

template <class T>
void dot_tiles(const MatmulArgs& args, Tensor& out) {
  const int64_t K = args.a.size(-1), N = args.b.size(-2), M = args.a.numel() / K;
  const Tensor x_tensor = args.a.contiguous();
  Scratch<float> x_values = widening_buffer<float, T>(M * K);
  const float* x = row_as<float>(x_tensor.data<T>(), M * K, x_values.data());
  const T* w = args.b.data<T>();
  const CpuEpilogue<T> epilogue(args, out, N);
  // Column tiles in tasks of 16 KiB of weights or more: enough to hide the dispatch.
  const int64_t tiles = (N + kTileCols - 1) / kTileCols;
  const int64_t grain =
      std::max<int64_t>(1, (16 << 10) / std::max<int64_t>(1, kTileCols * K * int64_t(sizeof(T))));
  parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
    float dots[kTileRows][kTileCols];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = t * kTileCols, cols = std::min<int64_t>(kTileCols, N - n0);
      const int64_t next = std::min<int64_t>(kTileCols, N - n0 - cols),
                    passes = (M + kTileRows - 1) / kTileRows;
      for (int64_t m0 = 0; m0 < M; m0 += kTileRows) {  // the tile's weights stay in L1 across the rows
        const int rows = int(std::min<int64_t>(kTileRows, M - m0));
        // The next tile's weights come from memory while this one's rows run from L1 (the first pass
        // alone, waiting on them, ran at half the rate of the others).
        if (next > 0)
          prefetch_part(w + (n0 + cols) * K, next * K * int64_t(sizeof(T)), m0 / kTileRows, passes);
        if (cols == kTileCols)
          dot_rows<kTileCols>(rows, x + m0 * K, w + n0 * K, K, dots);
        else
          for (int64_t c = 0; c < cols; ++c) {  // the last columns one at a time
            float one[kTileRows][kTileCols];
            dot_rows<1>(rows, x + m0 * K, w + (n0 + c) * K, K, one);
            for (int r = 0; r < rows; ++r) dots[r][c] = one[r][0];
          }
        for (int r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) epilogue.store(m0 + r, n0 + c, dots[r][c]);
      }
    }
  });
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

// NOTE [few rows]: measured against oneDNN (docs/perf.md, "Serving"), the AVX-512 tiles in f32 are faster
// up to 32 rows alone, and within a decode step up to 64 while the rows fit in L2 (K up to 1024), where
// they also spare the hand-over between Dew's threads and the library's OpenMP team. In bf16 the library
// multiplies with AVX512-BF16 dot products at twice the f32 rate, and the AVX2 tiles (2 rows by 4) are
// measured only to 8 rows: there the tiles take up to 4 rows, and 8 with up to 4096 outputs a row.
bool few_rows(const MatmulArgs& a) {
  const int64_t K = a.a.size(-1), M = a.a.numel() / std::max<int64_t>(1, K), N = a.b.size(-2);
#if DEW_HAS_F32X16
  if (a.a.dtype() == DType::f32) return M <= 32 || (M <= 64 && K <= 1024);
#endif
  return M <= 4 || (M <= 8 && N <= 4096);
}

void add_matmul_dot_tiles_cpu(select::Registry<MatmulArgs>& r, bool only_few_rows) {
#if DEW_HAS_FLOAT_VEC
  std::vector<select::Requirement<MatmulArgs>> more = {select::requires_that<MatmulArgs>(
      "rows of a against the contiguous (N,K) rows of b, transposed",
      [](const MatmulArgs& a) {
        return !a.options.transpose_a && a.options.transpose_b && a.b.dim() == 2 && a.b.is_contiguous();
      },
      [](const MatmulArgs& a) {
        return fmt::format("a is {} and b is {}{}", a.a.describe(), a.b.describe(),
                           a.options.transpose_b ? "" : " (not transposed)");
      })};
  if (only_few_rows)
    more.push_back(select::requires_that<MatmulArgs>(
        "a few rows: f32 up to 32, or 64 with K up to 1024; bf16 up to 4, or 8 with up to 4096 columns (NOTE "
        "[few rows])",
        few_rows, [](const MatmulArgs& a) {
          return fmt::format("a is {} and b is {}", a.a.describe(), a.b.describe());
        }));
  add_cpu_f32_bf16<MatmulArgs>(
      r, [](auto t, const MatmulArgs& a, std::vector<Tensor>& outs) { dot_tiles<decltype(t)>(a, outs[0]); },
      more, only_few_rows ? "dot_tiles_few_rows" : "dot_tiles");
#else
  (void)r, (void)only_few_rows;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
