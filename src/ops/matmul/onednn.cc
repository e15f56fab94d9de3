// matmul through oneDNN (chosen over OpenBLAS and BLIS by measurement: docs/perf.md). f32, and bf16
// where the CPU has native bf16 dot products, go through its matmul primitive, which writes the output
// dtype itself with scale, bias and residual as post-ops, its scratchpad from Dew's allocator; with an
// activation f32 goes through sgemm (bias and residual in beta*C) and one epilogue pass; bf16 without
// native products and f16 are widened to f32 (exact) in one pass and go the sgemm way.
#include <oneapi/dnnl/dnnl.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <optional>
#include <unordered_map>

#include "ops/cast/cast.h"
#include "ops/kernel_types.h"
#include "ops/matmul/epilogue.h"
#include "ops/matmul/matmul.h"
#include "ops/unary/unary.h"

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

void matmul_sgemm(const MatmulArgs& args32, Tensor& c, const float* bias, const float* residual) {
  float* C = c.data<float>();
  const MatmulOptions& o = args32.options;
  MatmulGeometry g = matmul_geometry_folded(args32);
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
  if (!fuse) activation_in_place(o.activation, c, residual);
}

// f32 or bf16 operands straight into oneDNN's matmul primitive (f32 accumulation), where oneDNN has a
// native kernel for this CPU (for bf16: AVX-512 BF16); false when it would fall back to its slow
// reference code or has none (and for f32 with an activation): the caller goes the sgemm way instead.
// Without an activation the primitive writes the output itself — scale, then bias and residual as f32
// post-op adds, one rounding at the end, as the epilogue does — so no f32 product is kept and read
// again; with one (bf16), an f32 product and one epilogue pass. Its scratchpad comes from Dew's
// allocator, so a step maps no fresh pages for it.
bool matmul_primitive(const MatmulArgs& args, Tensor& out) {
  using dnnl::memory;
  MatmulGeometry g = matmul_geometry_folded(args);
  const size_t br = g.batch.size();
  Tensor a = g.a, b = g.b;
  auto plain = [&](Tensor& t) {  // oneDNN takes any strides but 0 within a matrix
    if (t.strides()[br] == 0 || t.strides()[br + 1] == 0) t = t.contiguous();
  };
  plain(a);
  plain(b);
  const MatmulOptions& o = args.options;
  const bool direct = o.activation == Activation::none;
  if (!direct && args.dtype() == DType::f32) return false;  // sgemm's path applies the activation
  Tensor bias = o.bias.defined() ? o.bias.contiguous() : Tensor(),
         residual = o.residual.defined() ? o.residual.contiguous() : Tensor();
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::data_type type =
      args.dtype() == DType::f32 ? memory::data_type::f32 : memory::data_type::bf16;
  // NOTE [rows in pieces]: with A transposed (M its contiguous dimension), oneDNN's matmul slows down
  // on tens of thousands of rows — GPT-2's tied head's weight gradient, 50257 rows, runs far faster in
  // pieces of 8192 rows (docs/perf.md) — so such a product runs as pieces of at most that many rows,
  // each a large product of its own.
  constexpr int64_t kRowsPerPiece = 8192;
  const bool rows_strided = a.strides()[br] == 1 && a.strides()[br + 1] != 1;
  const int64_t piece_rows = rows_strided && g.M > kRowsPerPiece ? kRowsPerPiece : g.M;
  const memory::desc bias_md({1, g.N}, type, {g.N, 1});
  // NOTE [f32 weights (K,N) reordered]: an f32 b stored row-major (N its contiguous dimension: GPT-2's
  // Conv1D weights, and the activations a weight gradient reads) goes in oneDNN's own layout, reordered
  // at each call into Dew's memory, when a's rows are enough to pay for that pass over b: read in place,
  // widths such as 3072 ran at half the rate, the reorder included (docs/perf.md, "matmul: which
  // library"). One piece only: pieces could want two layouts.
  constexpr int64_t kRowsToReorder = 256;
  const bool reorder_b = type == memory::data_type::f32 && b.strides()[br + 1] == 1 && g.N > 1 &&
                         g.M >= kRowsToReorder && !(rows_strided && g.M > kRowsPerPiece);
  const memory::desc b_plain({g.K, g.N}, type, {b.strides()[br], b.strides()[br + 1]});
  struct Piece {
    memory::desc a_md, b_md, c_md, residual_md, scratch_md;
    dnnl::matmul prim;
  };
  // The primitive for `rows` rows of the output; nullopt where oneDNN has no native kernel for it.
  auto piece_of = [&](int64_t rows) -> std::optional<Piece> {
    Piece p;
    p.a_md = memory::desc({rows, g.K}, type, {a.strides()[br], a.strides()[br + 1]});
    p.b_md = reorder_b ? memory::desc({g.K, g.N}, type, memory::format_tag::any) : b_plain;
    p.c_md = memory::desc({rows, g.N}, direct ? type : memory::data_type::f32, {g.N, 1});
    p.residual_md = memory::desc({rows, g.N}, type, {g.N, 1});
    dnnl::primitive_attr piece_attr;
    piece_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (direct) {
      if (o.scale != 1.0) piece_attr.set_output_scales(0, {float(o.scale)});
      dnnl::post_ops post;
      if (bias.defined()) post.append_binary(dnnl::algorithm::binary_add, bias_md);
      if (residual.defined()) post.append_binary(dnnl::algorithm::binary_add, p.residual_md);
      piece_attr.set_post_ops(post);
    }
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a_md, p.b_md, p.c_md), piece_attr, engine);
    } catch (const dnnl::error&) {  // no such matmul at all on this CPU (bf16 without SSE4.1, say)
      return std::nullopt;
    }
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return std::nullopt;
    p.prim = dnnl::matmul(pd);
    p.b_md = pd.weights_desc();
    p.scratch_md = pd.scratchpad_desc();
    return p;
  };
  const int64_t tail_rows = g.M % piece_rows;
  const std::optional<Piece> full = piece_of(piece_rows);
  const std::optional<Piece> tail = tail_rows ? piece_of(tail_rows) : std::nullopt;
  if (!full || (tail_rows && !tail)) return false;
  dnnl::stream stream(engine);
  const Tensor scratch = Tensor::empty(
      {int64_t(std::max(full->scratch_md.get_size(), tail ? tail->scratch_md.get_size() : 0))}, DType::u8);
  Tensor c = direct ? out : Tensor::empty(out.shape(), DType::f32);
  const Tensor b_blocked = reorder_b ? Tensor::empty({int64_t(full->b_md.get_size())}, DType::u8) : Tensor();
  memory blocked = reorder_b ? memory(full->b_md, engine, b_blocked.raw_data()) : memory();
  const dnnl::reorder to_blocked =
      reorder_b ? dnnl::reorder(dnnl::reorder::primitive_desc(engine, b_plain, engine, full->b_md))
                : dnnl::reorder();
  auto a_off = batch_offsets(a, br), b_off = batch_offsets(b, br);
  const size_t element = dtype_size(args.dtype());
  char* A = static_cast<char*>(a.raw_data());
  char* B = static_cast<char*>(b.raw_data());
  const int64_t mn = g.M * g.N;
  for (size_t bi = 0; bi < a_off.size(); ++bi)
    for (int64_t m0 = 0; m0 < g.M; m0 += piece_rows) {
      const Piece& p = g.M - m0 < piece_rows ? *tail : *full;
      const int64_t c_at = int64_t(bi) * mn + m0 * g.N;  // elements into C (and the residual)
      memory b_item(b_plain, engine, B + b_off[bi] * int64_t(element));
      if (reorder_b) to_blocked.execute(stream, b_item, blocked);  // one piece: NOTE above
      std::unordered_map<int, memory> io{
          {DNNL_ARG_SRC, memory(p.a_md, engine, A + (a_off[bi] + m0 * a.strides()[br]) * int64_t(element))},
          {DNNL_ARG_WEIGHTS, reorder_b ? blocked : b_item},
          {DNNL_ARG_DST,
           memory(p.c_md, engine, static_cast<char*>(c.raw_data()) + c_at * dtype_size(c.dtype()))},
          {DNNL_ARG_SCRATCHPAD, memory(p.scratch_md, engine, scratch.raw_data())}};
      if (direct) {
        int post = 0;
        if (bias.defined())
          io[DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1] =
              memory(bias_md, engine, bias.raw_data());
        if (residual.defined())
          io[DNNL_ARG_ATTR_MULTIPLE_POST_OP(post++) | DNNL_ARG_SRC_1] = memory(
              p.residual_md, engine, static_cast<char*>(residual.raw_data()) + c_at * int64_t(element));
      }
      p.prim.execute(stream, io);
    }
  stream.wait();
  if (direct) return true;
  const bf16* bias_p = bias.defined() ? bias.data<bf16>() : nullptr;
  const bf16* residual_p = residual.defined() ? residual.data<bf16>() : nullptr;
  float* C = c.data<float>();
  bf16* Y = out.data<bf16>();
  // The epilogue act(scale acc + bias) + residual in three passes the compiler vectorizes (the
  // activation by the unary op's kernels), rounded to bf16 once at the end. By rows, so that the bias
  // is indexed without a division per element.
  const int64_t N = g.N, rows = out.numel() / N;
  const float scale = float(o.scale);
  parallel_for(rows, std::max<int64_t>(1, 16384 / N), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t n = 0; n < N; ++n)
        C[r * N + n] = scale * C[r * N + n] + (bias_p ? widen<float>(bias_p[n]) : 0.0f);
  });
  activation_in_place(o.activation, c, nullptr);
  parallel_for(out.numel(), 16384, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      Y[i] = narrow<bf16>(C[i] + (residual_p ? widen<float>(residual_p[i]) : 0.0f));
  });
  return true;
}

void matmul_onednn(const MatmulArgs& args, Tensor& out) {
  if ((args.dtype() == DType::f32 || args.dtype() == DType::bf16) && matmul_primitive(args, out)) return;
  MatmulArgs args32 = args;
  for (Tensor* t : args32.mutable_inputs())
    if (t->dtype() != DType::f32) *t = cast(*t, DType::f32);
  const MatmulOptions& o = args32.options;
  Tensor bias = o.bias.defined() ? o.bias.contiguous() : Tensor();
  Tensor residual = o.residual.defined() ? o.residual.contiguous() : Tensor();
  const float* bias_p = bias.defined() ? bias.data<float>() : nullptr;
  const float* residual_p = residual.defined() ? residual.data<float>() : nullptr;
  if (out.dtype() == DType::f32) return matmul_sgemm(args32, out, bias_p, residual_p);
  Tensor c32 = Tensor::empty(out.shape(), DType::f32);
  matmul_sgemm(args32, c32, bias_p, residual_p);
  cast_into(c32, out);
}

}  // namespace

void add_matmul_onednn(select::Registry<MatmulArgs>& r) {
  r.add({"cpu.onednn",
         {select::on_cpu<MatmulArgs>(), select::dtype_in<MatmulArgs>({DType::f32, DType::bf16, DType::f16})},
         [](const MatmulArgs& args, std::vector<Tensor>& outs) {
           with_glu_after(args, outs[0], [](const MatmulArgs& a, Tensor& y) { matmul_onednn(a, y); });
         }});
}

}  // namespace dew::ops
