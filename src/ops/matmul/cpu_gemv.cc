// matmul's one-row case, y = x W^T with W (N,K) rows — every linear layer of a decode step at batch 1
// — for each CPU tier (built once per tier, NOTE [instruction-set regions]): each output is the dot
// product of x with one contiguous row of W, so W streams from memory once, split across threads by
// rows. A general GEMM library pays packing and blocking meant for many rows (docs/perf.md).
#include "ops/cpu_tier.h"
#include "ops/kernel_types.h"
#include "ops/lanes.h"
#include "ops/matmul/epilogue.h"
#include "ops/matmul/matmul.h"
#include "ops/scratch.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {
namespace {

template <class T>
void gemv_rows(const MatmulArgs& args, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const MatmulOptions& o = args.options;
  const int64_t K = args.a.size(-1), N = args.b.size(-2);
  const Tensor x_tensor = args.a.contiguous();
  Scratch<Acc> x_values = widening_buffer<Acc, T>(K);
  const Acc* x = row_as<Acc>(x_tensor.data<T>(), K, x_values.data());
  const T* w = args.b.data<T>();
  const Tensor bias = o.bias.defined() ? o.bias.contiguous() : Tensor();
  const Tensor residual = o.residual.defined() ? o.residual.contiguous() : Tensor();
  const T* bias_p = bias.defined() ? bias.data<T>() : nullptr;
  const T* residual_p = residual.defined() ? residual.data<T>() : nullptr;
  T* y = out.data<T>();
  // Rows in blocks of 16 KiB of weights or more per task: enough to hide the dispatch.
  const int64_t grain = std::max<int64_t>(1, (16 << 10) / std::max<int64_t>(1, K * int64_t(sizeof(T))));
  parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const T* row = w + n * K;
      const Acc dot = lane_sum<kLanes, Acc>(K, [&](int64_t k) { return x[k] * widen<Acc>(row[k]); });
      y[n] = narrow<T>(matmul_epilogue<Acc>(o, dot, bias_p ? widen<Acc>(bias_p[n]) : Acc(0),
                                            residual_p ? widen<Acc>(residual_p[n]) : Acc(0)));
    }
  });
}

}  // namespace
}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END

// Registration runs on every CPU: outside the instruction-set region.
namespace dew::ops::DEW_KERNEL_NS {

void add_matmul_gemv_cpu(select::Registry<MatmulArgs>& r) {
  add_cpu_f32_bf16<MatmulArgs>(
      r, [](auto t, const MatmulArgs& a, std::vector<Tensor>& outs) { gemv_rows<decltype(t)>(a, outs[0]); },
      {select::requires_that<MatmulArgs>(
          "one row of a against the contiguous (N,K) rows of b, transposed",
          [](const MatmulArgs& a) {
            return a.a.numel() == a.a.size(-1) && !a.options.transpose_a && a.options.transpose_b &&
                   a.b.dim() == 2 && a.b.is_contiguous();
          },
          [](const MatmulArgs& a) {
            return fmt::format("a is {} and b is {}{}", a.a.describe(), a.b.describe(),
                               a.options.transpose_b ? "" : " (not transposed)");
          })},
      "gemv");
}

}  // namespace dew::ops::DEW_KERNEL_NS
