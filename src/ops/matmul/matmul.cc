// matmul's public function, validation, output rule, cases and registry.
#include "ops/matmul/matmul.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/strided.h"
#include "ops/activation.h"
#include "ops/glu/glu.h"
#include "ops/unary/unary.h"

namespace dew::ops {

std::vector<const Tensor*> MatmulArgs::inputs() const {
  std::vector<const Tensor*> v{&a, &b};
  if (options.bias.defined()) v.push_back(&options.bias);
  if (options.residual.defined()) v.push_back(&options.residual);
  return v;
}

std::vector<Tensor*> MatmulArgs::mutable_inputs() {
  std::vector<Tensor*> v{&a, &b};
  if (options.bias.defined()) v.push_back(&options.bias);
  if (options.residual.defined()) v.push_back(&options.residual);
  return v;
}

MatmulGeometry matmul_geometry(const MatmulArgs& args) {
  const auto& o = args.options;
  DEW_REQUIRE(args.a.dim() >= 2 && args.b.dim() >= 2,
              "[matmul] a is {} and b is {}; expected both of rank >= 2 (..., rows, cols)", args.a.describe(),
              args.b.describe());
  Tensor a = o.transpose_a ? args.a.transpose(-1, -2) : args.a;
  Tensor b = o.transpose_b ? args.b.transpose(-1, -2) : args.b;
  MatmulGeometry g;
  g.M = a.size(-2);
  g.K = a.size(-1);
  g.N = b.size(-1);
  DEW_REQUIRE(
      b.size(-2) == g.K,
      "[matmul] inner dims differ: op(a) is {} and op(b) is {}; expected op(a) (...,M,K) and op(b) (...,K,N)",
      shape_str(a.shape()), shape_str(b.shape()));
  Shape a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
  g.batch = broadcast_shapes(a_batch, b_batch, "matmul");
  Shape a_full = g.batch, b_full = g.batch;
  a_full.insert(a_full.end(), {g.M, g.K});
  b_full.insert(b_full.end(), {g.K, g.N});
  g.a = a.expand(a_full);
  g.b = b.expand(b_full);
  return g;
}

MatmulGeometry matmul_geometry_folded(const MatmulArgs& args) {
  MatmulGeometry g = matmul_geometry(args);
  const size_t br = g.batch.size();
  if (br == 0 || !g.a.is_contiguous()) return g;
  for (size_t d = 0; d < br; ++d)
    if (g.b.strides()[d] != 0 && g.batch[d] != 1) return g;
  MatmulGeometry folded;
  folded.M = g.M * g.batch_count();
  folded.N = g.N;
  folded.K = g.K;
  folded.a = g.a.reshape({folded.M, g.K});
  folded.b = g.b;
  while (folded.b.dim() > 2) folded.b = folded.b.select(0, 0);
  return folded;
}

std::vector<int64_t> batch_offsets(const Tensor& t, size_t batch_rank) {
  Shape shape(t.shape().begin(), t.shape().begin() + int64_t(batch_rank));
  Strides strides(t.strides().begin(), t.strides().begin() + int64_t(batch_rank));
  std::vector<int64_t> out;
  out.reserve(size_t(numel_of(shape)));
  detail::for_each_offset(shape, strides, [&](int64_t off) { out.push_back(off); });
  return out;
}

std::string Matmul::case_label(const Args& a) {
  const auto& o = a.options;
  std::string label(dtype_name(a.dtype()));
  if (o.transpose_a) label += " ta";
  if (o.transpose_b) label += " tb";
  if (o.bias.defined()) label += " bias";
  if (o.activation != Activation::none) label += fmt::format(" {}", activation_name(o.activation));
  if (o.glu) label += " glu";
  if (o.residual.defined()) label += " residual";
  return label;
}

std::string Matmul::profile_label(const Args& a) {
  const MatmulGeometry g = matmul_geometry_folded(a);
  const std::string batch = g.batch.empty() ? "" : fmt::format("{}x ", g.batch_count());
  return fmt::format("{}{}x{}x{} {}", batch, g.M, g.N, g.K, case_label(a));
}

std::vector<OutputSpec> Matmul::infer(const Args& args) {
  require_same_device("matmul", args.inputs());
  for (const Tensor* t : args.inputs())
    DEW_REQUIRE(t->dtype() == args.dtype(),
                "[matmul] {} has dtype {}; expected every operand in a's dtype {}", t->describe(),
                dtype_name(t->dtype()), dtype_name(args.dtype()));
  DEW_REQUIRE(is_floating(args.dtype()), "[matmul] a is {}; expected a floating dtype (f64, f32, bf16, f16)",
              args.a.describe());
  MatmulGeometry g = matmul_geometry(args);
  const auto& o = args.options;
  if (o.glu)
    DEW_REQUIRE((o.activation == Activation::silu || o.activation == Activation::gelu_erf ||
                 o.activation == Activation::gelu_tanh) &&
                    g.N % 2 == 0 && !o.residual.defined() &&
                    (args.dtype() == DType::f32 || args.dtype() == DType::f64),
                "[matmul] glu with activation {}, {} columns{}, {}; expected silu, gelu_erf or gelu_tanh, an "
                "even number of columns (the gate's then the up's), no residual, and f32 or f64 (in bf16 and "
                "f16, the product and then swiglu or geglu)",
                activation_name(o.activation), g.N, o.residual.defined() ? " and a residual" : "",
                dtype_name(args.dtype()));
  Shape out = g.batch;
  out.insert(out.end(), {g.M, o.glu ? g.N / 2 : g.N});
  if (o.bias.defined())
    DEW_REQUIRE(o.bias.dim() == 1 && o.bias.size(0) == g.N, "[matmul] bias is {}; expected shape [{}]",
                o.bias.describe(), g.N);
  if (o.residual.defined())
    DEW_REQUIRE(o.residual.shape() == out, "[matmul] residual is {}; expected the output's shape {}",
                o.residual.describe(), shape_str(out));
  return {{out, args.dtype()}};
}

double Matmul::flops(const Args& a) {
  MatmulGeometry g = matmul_geometry(a);
  return 2.0 * double(g.M) * double(g.N) * double(g.K) * double(g.batch_count());
}

std::vector<int64_t> Matmul::gemm_shape(const Args& a) {
  MatmulGeometry g = matmul_geometry(a);
  return {g.M, g.N, g.K, g.batch_count(), a.options.transpose_b ? 1 : 0};
}

const select::Registry<MatmulArgs>& Matmul::registry() {
  static const select::Registry<MatmulArgs> r = [] {
    select::Registry<MatmulArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_matmul_cuda, reg);
    avx512::add_matmul_gemv_cpu(reg);  // one row: before the library (docs/perf.md)
    avx2::add_matmul_gemv_cpu(reg);
    avx512::add_matmul_gemv_columns_cpu(reg);  // one row, weights stored (K,N): before the library
    avx2::add_matmul_gemv_columns_cpu(reg);
    avx512::add_matmul_rows_in_lanes_cpu(reg);  // a decode batch in f32: before the tiles (docs/perf.md)
    avx2::add_matmul_rows_in_lanes_cpu(reg);
    avx512::add_matmul_dot_tiles_cpu(reg, true);  // a few rows: before the library (NOTE [few rows])
    avx2::add_matmul_dot_tiles_cpu(reg, true);
    add_matmul_onednn(reg);
    avx512::add_matmul_dot_tiles_cpu(reg, false);  // every row on its own: batch-invariant serving pins it
    avx2::add_matmul_dot_tiles_cpu(reg, false);
    add_matmul_portable(reg);
    return reg;
  }();
  return r;
}

namespace {

// ReLU's kink makes a central difference wrong where a pre-activation lies within a step of 0 (the
// derivative rows check the rules against them): each column's bias goes mid-way into the widest gap
// between the column's values of -scale (a @ b), so no pre-activation is near the kink.
Tensor bias_away_from_the_kink(const MatmulArgs& args) {
  const int64_t K = args.a.size(-1), N = args.b.size(-1), rows = args.a.numel() / K;
  const std::vector<double> a = args.a.to_f64_vector(), b = args.b.to_f64_vector();
  std::vector<double> bias(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> zeros;  // the biases at which a row's pre-activation is 0
    for (int64_t r = 0; r < rows; ++r) {
      double dot = 0;
      for (int64_t k = 0; k < K; ++k) dot += a[size_t(r * K + k)] * b[size_t(k * N + n)];
      zeros.push_back(-args.options.scale * dot);
    }
    std::sort(zeros.begin(), zeros.end());
    size_t widest = 0;
    for (size_t i = 1; i + 1 < zeros.size(); ++i)
      if (zeros[i + 1] - zeros[i] > zeros[widest + 1] - zeros[widest]) widest = i;
    bias[size_t(n)] = (zeros[widest] + zeros[widest + 1]) / 2;
  }
  return Tensor::from_values(bias, {N}, args.a.dtype());
}

}  // namespace

std::vector<Case<MatmulArgs>> Matmul::cases(std::string_view) {
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  const std::vector<DType> wide{DType::f64, DType::f32};  // a gated unit's dtypes
  auto plain = [](Shape as, Shape bs, bool ta, bool tb) {
    return [=](DType t, RandomKey k) {
      MatmulArgs args{random_input(as, t, k), random_input(bs, t, {k.seed, k.stream + 1}), {}};
      args.options.transpose_a = ta;
      args.options.transpose_b = tb;
      return args;
    };
  };
  auto in_lanes = [](int64_t M, bool residual) {  // M rows against 262 weight rows of 33
    return [M, residual](DType t, RandomKey k) {
      MatmulArgs args{random_input({M, 33}, t, k), random_input({262, 33}, t, {k.seed, k.stream + 1}), {}};
      args.options.transpose_b = true;
      if (residual) args.options.residual = random_input({M, 262}, t, {k.seed, k.stream + 3});
      return args;
    };
  };
  // a (as) against N weight rows (nn.Linear's layout), a gated unit of N / 2 columns after the product.
  auto gated = [](Activation act, Shape as, int64_t N, bool bias) {
    return [=](DType t, RandomKey k) {
      MatmulArgs args{random_input(as, t, k), random_input({N, as.back()}, t, {k.seed, k.stream + 1}), {}};
      args.options.transpose_b = true;
      args.options.activation = act;
      args.options.glu = true;
      if (bias) {
        args.options.bias = random_input({N}, t, {k.seed, k.stream + 2});
        args.options.scale = 0.75;
      }
      return args;
    };
  };
  auto epilogue = [](Activation act, bool residual) {
    return [=](DType t, RandomKey k) {
      MatmulArgs args{random_input({2, 5, 24}, t, k), random_input({24, 12}, t, {k.seed, k.stream + 1}), {}};
      args.options.bias = random_input({12}, t, {k.seed, k.stream + 2});
      args.options.activation = act;
      args.options.scale = 0.75;
      if (residual) args.options.residual = random_input({2, 5, 12}, t, {k.seed, k.stream + 3});
      if (act == Activation::relu) args.options.bias = bias_away_from_the_kink(args);
      return args;
    };
  };
  return {
      {"square_64", {"ci"}, all, plain({64, 64}, {64, 64}, false, false)},
      {"odd_shapes", {"ci", "edge"}, all, plain({7, 33}, {33, 5}, false, false)},
      {"transposed_both", {"ci"}, all, plain({40, 17}, {9, 40}, true, true)},
      {"batched_broadcast", {"ci"}, all, plain({3, 1, 6, 16}, {4, 16, 10}, false, false)},
      // Enough rows that oneDNN takes b (K,N) in its own layout, reordered for each batch item (NOTE
      // [f32 weights (K,N) reordered]), with the bias and residual as post-ops.
      {"batched_rows_against_kn_weights",
       {"ci"},
       all,
       [](DType t, RandomKey k) {
         MatmulArgs args{
             random_input({2, 260, 24}, t, k), random_input({2, 24, 70}, t, {k.seed, k.stream + 1}), {}};
         args.options.bias = random_input({70}, t, {k.seed, k.stream + 2});
         args.options.residual = random_input({2, 260, 70}, t, {k.seed, k.stream + 3});
         return args;
       }},
      // A transposed with more rows than oneDNN takes at once (NOTE [rows in pieces]): a full piece and
      // a tail, the epilogue's residual rows following them.
      {"transposed_a_rows_in_pieces",
       {"ci"},
       all,
       [](DType t, RandomKey k) {
         MatmulArgs args{
             random_input({16, 8300}, t, k), random_input({16, 8}, t, {k.seed, k.stream + 1}), {}};
         args.options.transpose_a = true;
         args.options.bias = random_input({8}, t, {k.seed, k.stream + 2});
         args.options.residual = random_input({8300, 8}, t, {k.seed, k.stream + 3});
         args.options.scale = 0.75;
         return args;
       }},
      {"linear_3d", {"ci"}, all, plain({2, 9, 32}, {48, 32}, false, true)},
      {"long_k", {"ci"}, all, plain({4, 2048}, {2048, 4}, false, false)},
      {"bias_relu_residual", {"ci"}, all, epilogue(Activation::relu, true)},
      {"bias_gelu_tanh", {"ci"}, all, epilogue(Activation::gelu_tanh, false)},
      {"bias_silu_residual", {"ci"}, all, epilogue(Activation::silu, true)},
      {"one_row", {"ci", "edge"}, all, plain({1, 1, 67}, {29, 67}, false, true)},
      {"one_row_bias_silu_residual",
       {"ci"},
       all,
       [](DType t, RandomKey k) {
         MatmulArgs args{random_input({1, 40}, t, k), random_input({24, 40}, t, {k.seed, k.stream + 1}), {}};
         args.options.transpose_b = true;
         args.options.bias = random_input({24}, t, {k.seed, k.stream + 2});
         args.options.activation = Activation::silu;
         args.options.scale = 0.75;
         args.options.residual = random_input({1, 24}, t, {k.seed, k.stream + 3});
         return args;
       }},
      // Decode batches with the rows along the lanes (cpu_rows_in_lanes.cc): partial vectors of rows, a
      // tail of weight rows, K in vectors and a tail and below a vector; the residual alone (its direct
      // store) and bias, scale and SiLU.
      {"rows_in_lanes_residual",
       {"ci"},
       all,
       [](DType t, RandomKey k) {
         MatmulArgs args{
             random_input({37, 45}, t, k), random_input({270, 45}, t, {k.seed, k.stream + 1}), {}};
         args.options.transpose_b = true;
         args.options.residual = random_input({37, 270}, t, {k.seed, k.stream + 3});
         return args;
       }},
      // Each width of the rows in lanes (16, 32 and 64 lanes of rows), with tails of weight rows and of
      // rows, plain and with the residual.
      {"rows_in_lanes_plain_20", {"ci"}, all, in_lanes(20, false)},
      {"rows_in_lanes_residual_12", {"ci"}, all, in_lanes(12, true)},
      {"rows_in_lanes_plain_60", {"ci"}, all, in_lanes(60, false)},
      // A gated unit after the product (SwiGLU, GeGLU): with a bias and a scale; one row; a decode batch
      // with the rows in lanes, a tail of hidden units.
      {"glu_silu_bias", {"ci"}, wide, gated(Activation::silu, {2, 5, 24}, 16, true)},
      {"glu_gelu_tanh_one_row", {"ci"}, wide, gated(Activation::gelu_tanh, {1, 40}, 18, false)},
      {"rows_in_lanes_glu_silu", {"ci"}, wide, gated(Activation::silu, {20, 33}, 538, false)},
      {"rows_in_lanes_glu_gelu_erf", {"ci"}, wide, gated(Activation::gelu_erf, {37, 33}, 524, false)},
      {"rows_in_lanes_bias_silu",
       {"ci"},
       all,
       [](DType t, RandomKey k) {
         MatmulArgs args{
             random_input({2, 15, 9}, t, k), random_input({257, 9}, t, {k.seed, k.stream + 1}), {}};
         args.options.transpose_b = true;
         args.options.bias = random_input({257}, t, {k.seed, k.stream + 2});
         args.options.activation = Activation::silu;
         args.options.scale = 0.75;
         return args;
       }},
      // A decode batch (NOTE [few rows]): tiles of rows and of weight rows with tails in both, and in K.
      {"few_rows_bias_silu_residual",
       {"ci"},
       all,
       [](DType t, RandomKey k) {
         MatmulArgs args{random_input({5, 67}, t, k), random_input({29, 67}, t, {k.seed, k.stream + 1}), {}};
         args.options.transpose_b = true;
         args.options.bias = random_input({29}, t, {k.seed, k.stream + 2});
         args.options.activation = Activation::silu;
         args.options.scale = 0.75;
         args.options.residual = random_input({5, 29}, t, {k.seed, k.stream + 3});
         return args;
       }},
      // GPT-2's Conv1D at batch 1: weights (K,N), a full block of columns and a tail with lanes left.
      {"one_row_untransposed_bias_gelu_residual",
       {"ci"},
       all,
       [](DType t, RandomKey k) {
         MatmulArgs args{
             random_input({1, 1, 70}, t, k), random_input({70, 290}, t, {k.seed, k.stream + 1}), {}};
         args.options.bias = random_input({290}, t, {k.seed, k.stream + 2});
         args.options.activation = Activation::gelu_tanh;
         args.options.scale = 0.75;
         args.options.residual = random_input({1, 1, 290}, t, {k.seed, k.stream + 3});
         return args;
       }},
      {"gpt2_decode_mlp_up",
       {"bench"},
       {DType::f32, DType::bf16},
       plain({1, 768}, {768, 3072}, false, false)},
      {"decode_batch_8_mlp_up",
       {"bench"},
       {DType::f32, DType::bf16},
       plain({8, 768}, {2048, 768}, false, true)},
      // 32 and 64 decode rows through the default model's up projection (NOTE [few rows])
      {"decode_batch_32_mlp_up",
       {"bench"},
       {DType::f32, DType::bf16},
       plain({32, 384}, {1024, 384}, false, true)},
      {"decode_batch_32_mlp_gate_up_glu",
       {"bench"},
       {DType::f32},
       [plain](DType t, RandomKey k) {
         MatmulArgs args = plain({32, 384}, {2048, 384}, false, true)(t, k);
         args.options.activation = Activation::silu;
         args.options.glu = true;
         return args;
       }},
      {"decode_batch_64_mlp_up",
       {"bench"},
       {DType::f32, DType::bf16},
       plain({64, 384}, {1024, 384}, false, true)},
      {"llama_decode_mlp_down",
       {"bench"},
       {DType::f32, DType::bf16},
       plain({1, 2048}, {768, 2048}, false, true)},
      {"llama_decode_lm_head",
       {"bench"},
       {DType::f32, DType::bf16},
       plain({1, 768}, {32000, 768}, false, true)},
      {"gpt2_mlp_up", {"bench"}, {DType::f32, DType::bf16}, plain({4096, 768}, {768, 3072}, false, false)},
      {"llama8b_qkv", {"bench"}, {DType::f32, DType::bf16}, plain({512, 4096}, {6144, 4096}, false, true)},
      // grouped_matmul's mixtral_small_up as one dense product of the same FLOPs (its ceiling)
      {"mixtral_small_up_dense",
       {"bench"},
       {DType::f32, DType::bf16},
       plain({1024, 512}, {1408, 512}, false, true)},
  };
}

}  // namespace dew::ops

namespace dew {

Tensor matmul(const Tensor& a, const Tensor& b, const MatmulOptions& options) {
  // When a gradient will be taken, an activation runs as its own op after the product, so the tape keeps
  // the pre-activation for it: matmul's own rule would recompute that product in the backward (a third
  // more work for an MLP's first projection), as PyTorch keeps it too. Without gradients it stays fused.
  using detail::needs_grad;
  const bool recorded = detail::grad_mode() && (needs_grad(a) || needs_grad(b) || needs_grad(options.bias) ||
                                                needs_grad(options.residual));
  if (options.activation != Activation::none && recorded) {
    if (options.glu) ops::Matmul::infer(ops::MatmulArgs{a, b, options});  // the fused call's checks
    MatmulOptions product = options;
    product.activation = Activation::none;
    product.residual = Tensor();
    product.glu = false;
    const Tensor z = ops::run_op<ops::Matmul>(ops::MatmulArgs{a, b, product})[0];
    if (options.glu) {
      const int64_t F = z.size(-1) / 2;
      return ops::run_op<ops::Glu>(
          ops::GluArgs{Tensor(), z.slice(-1, 0, F), z.slice(-1, F, 2 * F), options.activation, false})[0];
    }
    const Tensor y = ops::run_op<ops::Unary>(ops::UnaryArgs{z, ops::unary_of(options.activation)})[0];
    return options.residual.defined() ? add(y, options.residual) : y;
  }
  return ops::run_op<ops::Matmul>(ops::MatmulArgs{a, b, options})[0];
}

}  // namespace dew
