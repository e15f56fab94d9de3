// matmul through oneDNN's sgemm (chosen over OpenBLAS and BLIS by measurement: docs/perf.md).
// f32 runs in place through sgemm; bf16 goes through the matmul primitive where the CPU has native
// bf16 dot products, else (and f16 always) operands are widened to f32 (exact) in one pass. Bias and
// residual fuse into sgemm's beta*C when there is no activation; otherwise the epilogue is one pass.
#include <oneapi/dnnl/dnnl.h>

#include <oneapi/dnnl/dnnl.hpp>

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

// bf16 operands straight into oneDNN's matmul primitive (f32 accumulation and output), where oneDNN
// has a native bf16 kernel for this CPU (AVX-512 BF16); false when it would fall back to its slow
// reference code or has none, and the caller widens to f32 instead. The epilogue then runs as one pass over
// C.
bool matmul_bf16_native(const MatmulArgs& args, Tensor& out) {
  using dnnl::memory;
  MatmulGeometry g = matmul_geometry(args);
  const size_t br = g.batch.size();
  Tensor a = g.a, b = g.b;
  auto plain = [&](Tensor& t) {  // oneDNN takes any strides but 0 within a matrix
    if (t.strides()[br] == 0 || t.strides()[br + 1] == 0) t = t.contiguous();
  };
  plain(a);
  plain(b);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::desc a_md({g.M, g.K}, memory::data_type::bf16, {a.strides()[br], a.strides()[br + 1]});
  const memory::desc b_md({g.K, g.N}, memory::data_type::bf16, {b.strides()[br], b.strides()[br + 1]});
  const memory::desc c_md({g.M, g.N}, memory::data_type::f32, {g.N, 1});
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  } catch (const dnnl::error&) {  // no bf16 matmul at all on this CPU (one without SSE4.1, say)
    return false;
  }
  if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return false;
  dnnl::matmul prim(pd);
  dnnl::stream stream(engine);
  Tensor c = Tensor::empty(out.shape(), DType::f32);
  auto a_off = batch_offsets(a, br), b_off = batch_offsets(b, br);
  const bf16* A = a.data<bf16>();
  const bf16* B = b.data<bf16>();
  for (size_t bi = 0; bi < a_off.size(); ++bi) {
    memory a_mem(a_md, engine, const_cast<bf16*>(A + a_off[bi]));
    memory b_mem(b_md, engine, const_cast<bf16*>(B + b_off[bi]));
    memory c_mem(c_md, engine, c.data<float>() + int64_t(bi) * g.M * g.N);
    prim.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
  }
  stream.wait();
  const MatmulOptions& o = args.options;
  Tensor bias = o.bias.defined() ? o.bias.contiguous() : Tensor(),
         residual = o.residual.defined() ? o.residual.contiguous() : Tensor();
  const bf16* bias_p = bias.defined() ? bias.data<bf16>() : nullptr;
  const bf16* residual_p = residual.defined() ? residual.data<bf16>() : nullptr;
  const float* C = c.data<float>();
  bf16* Y = out.data<bf16>();
  // By rows, so that the bias is indexed without a division per element; without an activation (the
  // common case under a gradient, matmul.cc) the loop is the epilogue's arithmetic written out, which
  // the compiler vectorizes.
  const int64_t N = g.N, rows = out.numel() / N;
  const float scale = float(o.scale);
  parallel_for(rows, std::max<int64_t>(1, 16384 / N), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* c = C + r * N;
      const bf16* res = residual_p ? residual_p + r * N : nullptr;
      bf16* y = Y + r * N;
      if (o.activation != Activation::none) {
        for (int64_t n = 0; n < N; ++n)
          y[n] = narrow<bf16>(matmul_epilogue<float>(o, c[n], bias_p ? widen<float>(bias_p[n]) : 0.0f,
                                                     res ? widen<float>(res[n]) : 0.0f));
      } else {
        for (int64_t n = 0; n < N; ++n)
          y[n] = f32_to_bf16((scale * c[n] + (bias_p ? bf16_to_f32(bias_p[n]) : 0.0f)) +
                             (res ? bf16_to_f32(res[n]) : 0.0f));
      }
    }
  });
  return true;
}

void matmul_onednn(const MatmulArgs& args, Tensor& out) {
  if (args.dtype() == DType::bf16 && matmul_bf16_native(args, out)) return;
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
