// matmul: the GEMM template. out = act(scale * op(a) @ op(b) + bias) + residual, where op() transposes
// the last two dims when asked. a (...,M,K), b (...,K,N) with broadcast batch dims; bias (N);
// residual (...,M,N) of the output's shape. f32/bf16/f16/f64 operands, one dtype for all; bf16 and f16
// accumulate in f32.
#pragma once

#include <dew/ops.h>

#include <functional>

#include "ops/op.h"

namespace dew::ops {

struct MatmulArgs {
  Tensor a, b;
  MatmulOptions options;
  DType dtype() const { return a.dtype(); }
  Device device() const { return a.device(); }
  std::vector<const Tensor*> inputs() const;
  std::vector<Tensor*> mutable_inputs();
};

// Logical operands after the transposes, expanded to the common batch shape: (batch..., M, K) and
// (batch..., K, N), as views.
struct MatmulGeometry {
  Tensor a, b;
  Shape batch;
  int64_t M = 0, N = 0, K = 0;
  int64_t batch_count() const { return numel_of(batch); }
};
MatmulGeometry matmul_geometry(const MatmulArgs& args);
// The same product as one tall GEMM where it is one: b shared by every batch entry (a Linear layer's
// weight) and op(a)'s rows evenly strided across the batch, so the batch folds into M. Libraries run
// one (B T, K) x (K, N) product at a higher rate than B products of T rows.
MatmulGeometry matmul_geometry_folded(const MatmulArgs& args);
// Element offsets of each batch entry's matrix in a (batch..., R, C) view.
std::vector<int64_t> batch_offsets(const Tensor& t, size_t batch_rank);

struct Matmul {
  DEW_OP_TYPE_MEMBERS(MatmulArgs);
  static std::string_view name(const Args&) { return "matmul"; }
  static std::string case_label(const Args& a);
  static std::string profile_label(const Args& a);        // "[batch x] M x N x K" and the case label
  static double flops(const Args& a);                     // 2 M N K per batch entry
  static std::vector<int64_t> gemm_shape(const Args& a);  // {M, N, K, batch, transpose_b}
  DEW_OP_RULES;
};

// An activation applied in place to the f32 products c by the unary op's kernels (vectorized per CPU
// tier), then the residual added.
void activation_in_place(Activation activation, Tensor& c, const float* residual);
// NOTE [activation after the product]: the CPU's own kernels apply their epilogue an output at a time,
// where an activation (GELU's tanh, SiLU's exp) is a scalar call costing more than the output's share of
// the product (gpt2's c_fc at a decode step's 32 rows: 92 GFLOP/s with GELU in the epilogue). So an f32
// product with an activation runs without it, and activation_in_place applies it to the whole output,
// as oneDNN's products do; other dtypes keep the epilogue's.
void with_activation_after(const MatmulArgs& args, Tensor& out,
                           const std::function<void(const MatmulArgs&, Tensor&)>& product);
// NOTE [a gated unit after the product]: an implementation that does not fuse options.glu runs the
// product (its bias and scale, no activation) into an output of both halves, then the glu op's kernels
// from it into `out`: the values of the product and the glu op called one after the other.
void with_glu_after(const MatmulArgs& args, Tensor& out,
                    const std::function<void(const MatmulArgs&, Tensor&)>& product);

void add_matmul_portable(select::Registry<MatmulArgs>& r);
void add_matmul_onednn(select::Registry<MatmulArgs>& r);
void add_matmul_cuda(select::Registry<MatmulArgs>& r);
DEW_DECLARE_CPU_TIERS(void add_matmul_gemv_cpu(select::Registry<MatmulArgs>& r))
DEW_DECLARE_CPU_TIERS(void add_matmul_gemv_columns_cpu(select::Registry<MatmulArgs>& r))
// `only_few_rows`: the default for products of a few rows (NOTE [few rows]); else any rows, after the
// library, for the batch-invariant mode to pin.
DEW_DECLARE_CPU_TIERS(void add_matmul_dot_tiles_cpu(select::Registry<MatmulArgs>& r, bool only_few_rows))
DEW_DECLARE_CPU_TIERS(void add_matmul_rows_in_lanes_cpu(select::Registry<MatmulArgs>& r))

}  // namespace dew::ops
