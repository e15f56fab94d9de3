// A transformer block's core ops on cuda:0 next to the same ops on the CPU: matmul, rms_norm,
// attention and cross_entropy on the device, the results read back and printed beside the CPU's;
// then bf16 attention, on the tensor cores when DEW_IMPL pins cuda.flash_mma.
// Without a CUDA device (or a build without the toolkit) it says so and exits 0.
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cmath>
#include <cstdio>

using namespace dew;

// The largest |a - b| relative to max |b|.
double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_f64_vector(), y = b.to_f64_vector();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i)
    diff = std::max(diff, std::fabs(x[i] - y[i])), scale = std::max(scale, std::fabs(y[i]));
  return scale > 0 ? diff / scale : diff;
}

int main() {
  if (cuda_device_count() == 0) {
    std::printf("no CUDA device here: the GPU part of this example is skipped\n");
    return 0;
  }
  const Device gpu = Device::cuda(0);
  const int64_t B = 2, T = 128, H = 4, D = 64, C = H * D, V = 1000;
  auto draw = [](const Shape& s, uint64_t stream) {
    Tensor t = Tensor::empty(s, DType::f32);
    fill_normal(t, {7, stream, 0}, 0.0, 0.5);
    return t;
  };
  const Tensor x = draw({B * T, C}, 1), w = draw({C, 3 * C}, 2), norm_w = draw({C}, 3),
               head = draw({C, V}, 4);
  Tensor targets = Tensor::empty({B * T}, DType::i64);
  fill_randint(targets, {7, 5, 0}, 0, V);

  // The same computation on a device: every input moved once, every op routed to a cuda.* kernel.
  auto block = [&](Device d) {
    const Tensor h = rms_norm(x.to(d), norm_w.to(d), 1e-6);
    const Tensor qkv = matmul(h, w.to(d)).reshape({B, T, 3, H, D});
    const Tensor q = qkv.select(2, 0).contiguous(), k = qkv.select(2, 1).contiguous(),
                 v = qkv.select(2, 2).contiguous();
    AttentionOptions causal;
    causal.causal = true;
    const Tensor o = attention(q, k, v, causal).out.reshape({B * T, C});
    return cross_entropy(matmul(o, head.to(d)), targets.to(d));
  };
  const CrossEntropyResult cpu = block(Device::cpu()), cuda = block(gpu);
  std::printf("loss: cpu %.6f, cuda:0 %.6f\n", cpu.loss.to_f64_vector()[0], cuda.loss.to_f64_vector()[0]);
  std::printf("d_logits: largest difference %.2e of the largest value\n",
              relative_difference(cuda.d_logits, cpu.d_logits));
  // bf16 attention at D = 64: the SIMT kernels by default; run with
  // DEW_IMPL=attention:cuda.flash_mma (and DEW_ROUTES=1 to see it) for the tensor-core ones.
  {
    const Tensor q = cast(draw({B, T, H, D}, 6), DType::bf16), k = cast(draw({B, T, H, D}, 7), DType::bf16),
                 v = cast(draw({B, T, H, D}, 8), DType::bf16);
    AttentionOptions causal;
    causal.causal = true;
    const Tensor on_cpu = attention(q, k, v, causal).out,
                 on_gpu = attention(q.to(gpu), k.to(gpu), v.to(gpu), causal).out;
    std::printf("bf16 attention: largest difference %.2e of the largest value\n",
                relative_difference(on_gpu, on_cpu));
  }
  const MemoryStats m = cuda_memory_stats(0);
  std::printf("cuda:0 memory: %lld bytes in use, peak %lld\n", (long long)m.bytes_in_use,
              (long long)m.peak_bytes);
  return 0;  // the values are judged by the float64 gate (dew check --impl cuda), not here
}
