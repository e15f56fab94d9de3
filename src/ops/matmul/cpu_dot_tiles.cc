// matmul for a few rows against weights stored as nn.Linear has them, Y = X W^T with W (N,K), for each
// CPU tier (NOTE [instruction-set regions]), through the dot tiles (dot_tiles.h): a library GEMM packs
// and blocks for many rows; at a decode batch it runs below the machine's rate (docs/perf.md,
// "Serving"). Each output does not depend on the rows that come with it (NOTE [rows one at a time]),
// so serving's batch-invariant mode pins this implementation for every product.
#include <dew/runtime.h>

#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/matmul/cpu_epilogue.h"
#include "ops/matmul/dot_tiles.h"
#include "ops/matmul/matmul.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"
#include "simd/lanes.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_HAS_FLOAT_VEC
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
    dot_tile_columns(x, M, w, K, N, t0, t1,
                     [&](int64_t m, int64_t n, float value) { epilogue.store(m, n, value); });
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
#if DEW_HAS_F32X16
constexpr const char* kFewRows =
    "a few rows: f32 up to 32, or 64 with K up to 1024; bf16 up to 4, or 8 with up to 4096 columns (NOTE "
    "[few "
    "rows])";
#else
constexpr const char* kFewRows = "at most 4 rows, or 8 with at most 4096 columns (NOTE [few rows])";
#endif
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
    more.push_back(select::requires_that<MatmulArgs>(kFewRows, few_rows, [](const MatmulArgs& a) {
      return fmt::format("a is {} and b is {}", a.a.describe(), a.b.describe());
    }));
  add_cpu_f32_bf16<MatmulArgs>(
      r,
      [](auto t, const MatmulArgs& a, std::vector<Tensor>& outs) {
        with_activation_after(a, outs[0],
                              [](const MatmulArgs& b, Tensor& y) { dot_tiles<decltype(t)>(b, y); });
      },
      more, only_few_rows ? "dot_tiles_few_rows" : "dot_tiles");
#else
  (void)r, (void)only_few_rows;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
