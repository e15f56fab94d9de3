// matmul's one-row case against weights stored (K,N), y = x W — GPT-2's Conv1D layers at batch 1 — for
// each CPU tier (NOTE [instruction-set regions]): threads own blocks of columns and stream W's rows
// through them, each output one vector lane accumulating x[k] W[k,n] over k in order, so W is read
// once, in long runs. The one-row GEMV of cpu_gemv.cc takes weights stored (N,K); a library GEMM pays
// packing meant for many rows.
#include <dew/runtime.h>

#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/matmul/cpu_epilogue.h"
#include "ops/matmul/matmul.h"
#include "ops/scratch.h"
#include "simd/float_vec.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

#if DEW_HAS_FLOAT_VEC
inline constexpr int kBlockVectors = 8;  // accumulators a block of columns keeps in registers

// acc[v] += x[k] W[k, n0 + v W..] for k in [0, K): `vectors` full vectors, then `tail` lanes.
template <int NV, class T>
[[gnu::always_inline]] inline void column_block(const float* x, const T* w, int64_t K, int64_t N, int64_t n0,
                                                int tail, float* sums) {
  constexpr int64_t W = kVecWidth;
  FloatVec acc[NV + 1];
  for (int v = 0; v <= NV; ++v) acc[v] = 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    const T* row = w + k * N + n0;
    if (k + 8 < K) prefetch_ahead<0>(row + 8 * N, NV * W + tail);
    const FloatVec xk = x[k];
    for (int v = 0; v < NV; ++v) acc[v] = mul_add(xk, load_vec(row + v * W), acc[v]);
    if (tail) acc[NV] = mul_add(xk, load_vec(row + NV * W, tail), acc[NV]);
  }
  for (int v = 0; v < NV; ++v) store_vec(sums + v * W, acc[v]);
  if (tail) store_vec(sums + NV * W, acc[NV], tail);
}

template <class T>
void gemv_columns(const MatmulArgs& args, Tensor& out) {
  constexpr int64_t W = kVecWidth, kBlock = kBlockVectors * W;
  const int64_t K = args.a.size(-1), N = args.b.size(-1);
  const Tensor x_tensor = args.a.contiguous();
  Scratch<float> x_values = widening_buffer<float, T>(K);
  const float* x = row_as<float>(x_tensor.data<T>(), K, x_values.data());
  const T* w = args.b.data<T>();
  const CpuEpilogue<T> epilogue(args, out, N);
  parallel_for((N + kBlock - 1) / kBlock, 1, [&](int64_t b0, int64_t b1) {
    float sums[kBlock];
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n0 = b * kBlock, width = std::min(kBlock, N - n0);
      if (width == kBlock)
        column_block<kBlockVectors>(x, w, K, N, n0, 0, sums);
      else  // the last block: whole vectors one at a time, then the lanes left
        for (int64_t c = 0; c < width; c += W)
          column_block<0>(x, w, K, N, n0 + c, int(std::min(W, width - c)), sums + c);
      for (int64_t c = 0; c < width; ++c) epilogue.store(0, n0 + c, sums[c]);
    }
  });
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

void add_matmul_gemv_columns_cpu(select::Registry<MatmulArgs>& r) {
#if DEW_HAS_FLOAT_VEC
  add_cpu_f32_bf16<MatmulArgs>(
      r,
      [](auto t, const MatmulArgs& a, std::vector<Tensor>& outs) {
        with_activation_after(a, outs[0],
                              [](const MatmulArgs& b, Tensor& y) { gemv_columns<decltype(t)>(b, y); });
      },
      {select::requires_that<MatmulArgs>(
          "one row of a against the contiguous (K,N) rows of b, not transposed",
          [](const MatmulArgs& a) {
            return a.a.numel() == a.a.size(-1) && !a.options.transpose_a && !a.options.transpose_b &&
                   a.b.dim() == 2 && a.b.is_contiguous();
          },
          [](const MatmulArgs& a) {
            return fmt::format("a is {} and b is {}{}", a.a.describe(), a.b.describe(),
                               a.options.transpose_b ? " (transposed)" : "");
          })},
      "gemv_columns");
#else
  (void)r;
#endif
}

}  // namespace dew::ops::DEW_KERNEL_NS
