// matmul's one-row case, y = x W^T with W (N,K) rows — every linear layer of a decode step at batch 1
// — for each CPU tier (built once per tier, NOTE [instruction-set regions]): each output is the dot
// product of x with one contiguous row of W, so W streams from memory once, split across threads by
// rows. A general GEMM library pays packing and blocking meant for many rows.
#include <immintrin.h>

#include <dew/runtime.h>

#include "core/pacing.h"
#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"
#include "ops/matmul/cpu_epilogue.h"
#include "ops/matmul/matmul.h"
#include "ops/scratch.h"
#include "simd/lanes.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

// y[n] = epilogue(dot(n)) for every row n of W, split across threads by rows (NOTE [paced ranges]:
// a row's dot is the same whichever thread computes it).
template <class T, class Dot>
void for_each_output(const MatmulArgs& args, Tensor& out, Dot dot) {
  const int64_t K = args.a.size(-1), N = args.b.size(-2);
  const CpuEpilogue<T> epilogue(args, out, N);
  // Rows in blocks of 16 KiB of weights or more per task: enough to hide the dispatch.
  const int64_t grain = std::max<int64_t>(1, (16 << 10) / std::max<int64_t>(1, K * int64_t(sizeof(T))));
  static Pacing pacing;
  parallel_for_paced(pacing, N, grain, [&](int, int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) epilogue.store(0, n, dot(n));
  });
}

#if DEW_HAS_FLOAT_VEC
// x . row on FloatVec in four partial sums, asking for the lines kPrefetchBytes ahead a step at a time:
// a thread's rows follow one another in memory, and the hardware prefetchers stop at page ends (NOTE
// [prefetching maps]).
template <class T>
float dot_vec(const float* x, const T* row, int64_t K) {
  constexpr int64_t W = kVecWidth;
  FloatVec s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int64_t k = 0;
  for (; k + 4 * W <= K; k += 4 * W) {
    prefetch_ahead<0>(row + k, 4 * W);
    s0 = mul_add(load_vec(x + k), load_vec(row + k), s0);
    s1 = mul_add(load_vec(x + k + W), load_vec(row + k + W), s1);
    s2 = mul_add(load_vec(x + k + 2 * W), load_vec(row + k + 2 * W), s2);
    s3 = mul_add(load_vec(x + k + 3 * W), load_vec(row + k + 3 * W), s3);
  }
  s0 = (s0 + s1) + (s2 + s3);
  for (; k + W <= K; k += W) s0 = mul_add(load_vec(x + k), load_vec(row + k), s0);
  if (k < K) s0 = mul_add(load_vec(x + k, int(K - k)), load_vec(row + k, int(K - k)), s0);
  return lanes_sum(s0);
}
#endif

template <class T>
void gemv_rows(const MatmulArgs& args, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t K = args.a.size(-1);
  const Tensor x_tensor = args.a.contiguous();
  Scratch<Acc> x_values = widening_buffer<Acc, T>(K);
  const Acc* x = row_as<Acc>(x_tensor.data<T>(), K, x_values.data());
  const T* w = args.b.data<T>();
#if DEW_HAS_FLOAT_VEC
  if (rows_on_float_vec<T>())
    return for_each_output<T>(args, out, [&](int64_t n) { return dot_vec(x, w + n * K, K); });
#endif
  for_each_output<T>(args, out, [&](int64_t n) {
    const T* row = w + n * K;
    return lane_sum<kLanes, Acc>(K, [&](int64_t k) { return x[k] * widen<Acc>(row[k]); });
  });
}

#if DEW_ISA_CONCAT(DEW_LANES_, DEW_KERNEL_NS) == 16
// bf16 rows through AVX512-BF16's vdpbf16ps: 32 bf16 products per instruction, summed into 16 f32
// lanes (each product exact, as in the widened path; inputs below 2^-126 count as zero). Widening
// bf16 to f32 first would make the GEMV compute-bound, below the bandwidth f32 rows get.
void gemv_rows_dpbf16(const MatmulArgs& args, Tensor& out) {
  const int64_t K = args.a.size(-1);
  const Tensor x_tensor = args.a.contiguous();
  const bf16* x = x_tensor.data<bf16>();
  const bf16* w = args.b.data<bf16>();
  for_each_output<bf16>(args, out, [&](int64_t n) {
    const bf16* row = w + n * K;
    __m512 even = _mm512_setzero_ps(), odd = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 64 <= K; k += 64) {
      prefetch_ahead<0>(row + k, 64);  // as dot_vec does
      even =
          _mm512_dpbf16_ps(even, (__m512bh)_mm512_loadu_si512(x + k), (__m512bh)_mm512_loadu_si512(row + k));
      odd = _mm512_dpbf16_ps(odd, (__m512bh)_mm512_loadu_si512(x + k + 32),
                             (__m512bh)_mm512_loadu_si512(row + k + 32));
    }
    for (; k + 32 <= K; k += 32)
      even =
          _mm512_dpbf16_ps(even, (__m512bh)_mm512_loadu_si512(x + k), (__m512bh)_mm512_loadu_si512(row + k));
    float dot = lanes_sum(F32x16(_mm512_add_ps(even, odd)));
    for (; k < K; ++k) dot += widen<float>(x[k]) * widen<float>(row[k]);
    return dot;
  });
}
#endif

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

// One row of a against the contiguous (N,K) rows of b, transposed: y = x W^T.
select::Requirement<MatmulArgs> one_row_against_weight_rows() {
  return select::requires_that<MatmulArgs>(
      "one row of a against the contiguous (N,K) rows of b, transposed",
      [](const MatmulArgs& a) {
        return a.a.numel() == a.a.size(-1) && !a.options.transpose_a && a.options.transpose_b &&
               a.b.dim() == 2 && a.b.is_contiguous();
      },
      [](const MatmulArgs& a) {
        return fmt::format("a is {} and b is {}{}", a.a.describe(), a.b.describe(),
                           a.options.transpose_b ? "" : " (not transposed)");
      });
}

void add_matmul_gemv_cpu(select::Registry<MatmulArgs>& r) {
#if DEW_ISA_CONCAT(DEW_LANES_, DEW_KERNEL_NS) == 16
  r.add(
      {std::string(kCpuImplName) + ".gemv_dpbf16",
       {select::on_cpu<MatmulArgs>(), cpu_has_tier<MatmulArgs>(), select::dtype_in<MatmulArgs>({DType::bf16}),
        select::requires_that<MatmulArgs>(
            "cpu_has(avx512bf16)", [](const MatmulArgs&) { return cpu_features().avx512bf16; },
            [](const MatmulArgs&) { return std::string("this CPU lacks AVX512-BF16"); }),
        one_row_against_weight_rows()},
       [](const MatmulArgs& a, std::vector<Tensor>& outs) {
         with_glu_after(a, outs[0], [](const MatmulArgs& b, Tensor& y) { gemv_rows_dpbf16(b, y); });
       }});
#endif
  add_cpu_f32_bf16<MatmulArgs>(
      r,
      [](auto t, const MatmulArgs& a, std::vector<Tensor>& outs) {
        with_activation_after(a, outs[0],
                              [](const MatmulArgs& b, Tensor& y) { gemv_rows<decltype(t)>(b, y); });
      },
      {one_row_against_weight_rows()}, "gemv");
}

}  // namespace dew::ops::DEW_KERNEL_NS
