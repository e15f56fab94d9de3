// A Llama-style decoder block's forward pass from Dew's ops, on random weights: rms_norm, the q/k/v
// projections, causal grouped-query attention, the output projection with a fused residual, and a
// SwiGLU MLP. Prints the output's statistics and the routes the selector took.
// Build: cmake --build build --target decoder_block; run: build/examples/decoder_block
#include <dew/ops.h>
#include <dew/runtime.h>
#include <fmt/format.h>

#include <cmath>

using namespace dew;

namespace {

Tensor random(const Shape& shape, uint64_t stream, double stddev) {
  Tensor t = Tensor::empty(shape, DType::f32);
  fill_normal(t, {1234, stream, 0}, 0.0, stddev);
  return t;
}

}  // namespace

int main() {
  const int64_t B = 2, T = 128, C = 256, H = 8, Hkv = 2, D = C / H, F = 688;
  Tensor x = random({B, T, C}, 0, 1.0);
  Tensor norm1 = Tensor::full({C}, 1.0, DType::f32), norm2 = Tensor::full({C}, 1.0, DType::f32);
  // nn.Linear layout: weights are (out, in), so the products transpose b.
  Tensor wq = random({H * D, C}, 1, 0.02), wk = random({Hkv * D, C}, 2, 0.02),
         wv = random({Hkv * D, C}, 3, 0.02);
  Tensor wo = random({C, H * D}, 4, 0.02), w_gate = random({F, C}, 5, 0.02), w_up = random({F, C}, 6, 0.02),
         w_down = random({C, F}, 7, 0.02);
  MatmulOptions linear;
  linear.transpose_b = true;

  reset_routes();
  Tensor h = rms_norm(x, norm1, 1e-5);
  Tensor q = matmul(h, wq, linear).reshape({B, T, H, D});
  Tensor k = matmul(h, wk, linear).reshape({B, T, Hkv, D});
  Tensor v = matmul(h, wv, linear).reshape({B, T, Hkv, D});
  AttentionOptions causal;
  causal.causal = true;
  AttentionResult att = attention(q, k, v, causal);
  MatmulOptions out_proj = linear;
  out_proj.residual = x;  // x + attn @ wo^T, fused into the GEMM
  Tensor x1 = matmul(att.out.reshape({B, T, H * D}), wo, out_proj);
  Tensor h2 = rms_norm(x1, norm2, 1e-5);
  MatmulOptions gate_proj = linear;
  gate_proj.activation = Activation::silu;
  Tensor mlp = mul(matmul(h2, w_gate, gate_proj), matmul(h2, w_up, linear));
  MatmulOptions down = linear;
  down.residual = x1;
  Tensor y = matmul(mlp, w_down, down);

  Tensor mean_y = mean(y), rms_y = sqrt(mean(square(y)));
  fmt::print("output {}: mean {:.5f}, rms {:.5f}\n", y.describe(), mean_y.to_f64_vector()[0],
             rms_y.to_f64_vector()[0]);
  fmt::print("routes:\n");
  for (const auto& r : routes())
    fmt::print("  {:<10} {:<12} {:<28} x{}\n", r.op, r.implementation, r.case_label, r.count);
  MemoryStats m = cpu_memory_stats();
  fmt::print("memory: {:.1f} MB in use, {:.1f} MB peak\n", m.bytes_in_use / 1e6, m.peak_bytes / 1e6);
  return 0;
}
