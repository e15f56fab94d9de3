// matmul through oneDNN's sgemm (chosen over OpenBLAS and BLIS by measurement: docs/perf.md).
// f32 runs in place; bf16 and f16 operands are widened to f32 (exact) in one pass (a bf16 GEMM through
// oneDNN's matmul primitive is future work). Bias and residual fuse into sgemm's beta*C when there is
// no activation; with one, the epilogue is one extra pass over C.
#include <oneapi/dnnl/dnnl.h>

#include "ops/cast/cast.h"
#include "ops/kernel_types.h"
#include "ops/matmul/epilogue.h"
#include "ops/matmul/matmul.h"

namespace dew::ops {
namespace {

struct BlasOperand {
  char trans;  // 'N' or 'T', row-major
  int64_t ld;
};

// How BLAS reads a (rows, cols) matrix with these strides, or nothing when it cannot.
std::optional<BlasOperand> blas_operand(int64_t rows, int64_t cols, int64_t srow, int64_t scol) {
  if ((scol == 1 || cols == 1) && (rows == 1 || srow >= std::max<int64_t>(1, cols)))
    return BlasOperand{'N', rows == 1 ? std::max<int64_t>(1, cols) : srow};
  if ((srow == 1 || rows == 1) && (cols == 1 || scol >= std::max<int64_t>(1, rows)))
    return BlasOperand{'T', cols == 1 ? std::max<int64_t>(1, rows) : scol};
  return std::nullopt;
}

void matmul_sgemm(const MatmulArgs& args32, float* C, const float* bias, const float* residual) {
  const MatmulOptions& o = args32.options;
  MatmulGeometry g = matmul_geometry(args32);
  size_t br = g.batch.size();
  auto layout = [&](Tensor& t, int64_t rows, int64_t cols) {
    auto op = blas_operand(rows, cols, t.strides()[br], t.strides()[br + 1]);
    if (!op) {
      t = t.contiguous();
      op = blas_operand(rows, cols, t.strides()[br], t.strides()[br + 1]);
    }
    return *op;
  };
  BlasOperand la = layout(g.a, g.M, g.K), lb = layout(g.b, g.K, g.N);
  auto a_off = batch_offsets(g.a, br), b_off = batch_offsets(g.b, br);
  const float* A = g.a.data<float>();
  const float* B = g.b.data<float>();
  const bool fuse = o.activation == Activation::none;
  const int64_t mn = g.M * g.N;
  for (size_t bi = 0; bi < a_off.size(); ++bi) {
    float* Cb = C + int64_t(bi) * mn;
    float beta = 0.0f;
    if (bias || (fuse && residual)) {  // C starts as bias (+ residual when fused)
      beta = 1.0f;
      for (int64_t m = 0; m < g.M; ++m)
        for (int64_t n = 0; n < g.N; ++n)
          Cb[m * g.N + n] =
              (bias ? bias[n] : 0.0f) + (fuse && residual ? residual[int64_t(bi) * mn + m * g.N + n] : 0.0f);
    }
    dnnl_status_t status = dnnl_sgemm(la.trans, lb.trans, g.M, g.N, g.K, float(o.scale), A + a_off[bi], la.ld,
                                      B + b_off[bi], lb.ld, beta, Cb, g.N);
    DEW_REQUIRE(status == dnnl_success, "[matmul] oneDNN sgemm failed with status {} on M={} N={} K={}",
                int(status), g.M, g.N, g.K);
  }
  if (!fuse) {
    int64_t total = int64_t(a_off.size()) * mn;
    parallel_for(total, 16384, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        C[i] = apply_activation(o.activation, C[i]) + (residual ? residual[i] : 0.0f);
    });
  }
}

void matmul_onednn(const MatmulArgs& args, Tensor& out) {
  MatmulArgs args32 = args;
  for (Tensor* t : args32.mutable_inputs())
    if (t->dtype() != DType::f32) *t = cast(*t, DType::f32);
  const MatmulOptions& o = args32.options;
  Tensor bias = o.bias.defined() ? o.bias.contiguous() : Tensor();
  Tensor residual = o.residual.defined() ? o.residual.contiguous() : Tensor();
  const float* bias_p = bias.defined() ? bias.data<float>() : nullptr;
  const float* residual_p = residual.defined() ? residual.data<float>() : nullptr;
  if (out.dtype() == DType::f32) return matmul_sgemm(args32, out.data<float>(), bias_p, residual_p);
  Tensor c32 = Tensor::empty(out.shape(), DType::f32);
  matmul_sgemm(args32, c32.data<float>(), bias_p, residual_p);
  cast_into(c32, out);
}

}  // namespace

void add_matmul_onednn(select::Registry<MatmulArgs>& r) {
  r.add({"cpu.onednn",
         {select::on_cpu<MatmulArgs>(), select::dtype_in<MatmulArgs>({DType::f32, DType::bf16, DType::f16})},
         [](const MatmulArgs& args, std::vector<Tensor>& outs) { matmul_onednn(args, outs[0]); }});
}

}  // namespace dew::ops
