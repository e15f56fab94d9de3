// `dew bench cuda` (cuda_bench.h). Times with CUDA events around each call (median of the reps after
// one warm-up); inputs are uniform draws, never zeros (zeros run faster than real data on a GPU: less
// switching power).
#include "cuda_bench.h"

#include <dew/ops.h>
#include <dew/runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <tuple>

#include "cuda/runtime.h"
#include "select/overrides.h"

namespace dew::bench {
namespace {

const Device kGpu = Device::cuda(0);

Tensor device_uniform(const Shape& shape, DType dtype, uint64_t stream, Device device = kGpu) {
  Tensor host = Tensor::empty(shape, dtype);
  fill_uniform(host, {2026, stream, 0}, -1.0, 1.0);
  return host.to(device);
}

// Median milliseconds of f on `device`'s stream over reps, after one warm-up call.
double median_ms(int reps, const std::function<void()>& f, int device = 0) {
  f();
  cuda::Timer timer(device);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    timer.start();
    f();
    ms.push_back(timer.stop_ms());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Row {
  std::string family, name;
  double ms = 0, rate = 0, ceiling = 0;  // rate and ceiling in TFLOP/s or GB/s
  std::string unit;
};

void print_row(const Row& r) {
  fmt::print("{:<10} {:<40} {:>10.3f} {:>10.1f} {:<7} {:>6.1f}%\n", r.family, r.name, r.ms, r.rate, r.unit,
             r.ceiling > 0 ? 100.0 * r.rate / r.ceiling : 0.0);
}

// Device-to-device copy bandwidth, counting bytes read plus bytes written.
double copy_gb_per_s(int reps) {
  const size_t bytes = size_t(2) << 30;
  Tensor a = Tensor::zeros({int64_t(bytes)}, DType::u8, kGpu),
         b = Tensor::empty({int64_t(bytes)}, DType::u8, kGpu);
  const double ms = median_ms(reps, [&] { cuda::copy_bytes(b.raw_data(), 0, a.raw_data(), 0, bytes); });
  return 2.0 * double(bytes) / (ms * 1e-3) * 1e-9;
}

// The RMS of a - b, in f64 on the device.
double rms_difference(const Tensor& a, const Tensor& b) {
  return std::sqrt(mean(square(sub(cast(a, DType::f64), cast(b, DType::f64)))).to_f64_vector()[0]);
}

}  // namespace

double gpu_gemm_ms(Device device, DType dtype, int64_t M, int64_t N, int64_t K, int reps) {
  const Tensor a = device_uniform({M, K}, dtype, 1, device), b = device_uniform({K, N}, dtype, 2, device);
  return median_ms(
      reps, [&] { matmul(a, b); }, device.index);
}

int run_cuda_bench(const CudaBenchOptions& o) {
  DEW_REQUIRE(cuda_device_count() > 0, "dew bench cuda: this machine has no CUDA device{}",
              cuda_device_count() == 0 ? " (or this build has no CUDA backend)" : "");
  DEW_REQUIRE(o.reps >= 1, "--reps {}: expected at least 1", o.reps);
  const cuda::DeviceProperties& p = cuda::properties(0);
  const double copy = copy_gb_per_s(o.reps);
  std::vector<Row> rows;
  auto gemm = [&](DType t, int64_t M, int64_t N, int64_t K, double ceiling) {
    const double ms = gpu_gemm_ms(kGpu, t, M, N, K, o.reps);
    rows.push_back({"gemm", fmt::format("{} {}x{}x{}", dtype_name(t), M, N, K), ms,
                    2.0 * double(M) * double(N) * double(K) / (ms * 1e-3) * 1e-12, ceiling, "TFLOP/s"});
    print_row(rows.back());
    return rows.back().rate;
  };
  fmt::print("device: {} (sm_{}, {} SMs, {:.0f} GiB); copy {:.0f} GB/s\n", p.name, p.sm, p.multiprocessors,
             double(p.memory_bytes) / double(1 << 30), copy);
  fmt::print("{:<10} {:<40} {:>10} {:>10} {:<7} {:>7}\n", "family", "case", "ms", "rate", "unit", "of ceil");
  const double bf16_peak = gemm(DType::bf16, 8192, 8192, 8192, 0);  // the dense bf16 ceiling of this run
  rows.back().ceiling = bf16_peak;
  const std::vector<std::array<int64_t, 3>> shapes =
      o.quick ? std::vector<std::array<int64_t, 3>>{{4096, 4096, 4096}}
              : std::vector<std::array<int64_t, 3>>{
                    {4096, 4096, 4096}, {8192, 2304, 768},   {8192, 768, 768},   {8192, 3072, 768},
                    {8192, 768, 3072},  {4096, 14336, 4096}, {4096, 4096, 14336}};
  for (const auto& s : shapes) gemm(DType::bf16, s[0], s[1], s[2], bf16_peak);
  for (const auto& s : shapes) gemm(DType::f32, s[0], s[1], s[2], 0);  // IEEE f32: no TF32

  // Attention, causal, B*T = 16k tokens and H*D = 2048 (FlashAttention's benchmark), bf16, forward and
  // backward of each implementation pinned in turn; the SIMT kernels (the exact baseline) at T = 1024.
  const char* user_pins = std::getenv("DEW_IMPL");
  for (const char* impl : {"cuda.flash_mma", "cuda.flash_simt"}) {
    select::set_impl_overrides(fmt::format("attention:{},attention_backward:{}", impl, impl));
    const bool simt = std::string_view(impl) == "cuda.flash_simt";
    for (int64_t D : {int64_t(64), int64_t(128)})
      for (int64_t T :
           o.quick || simt ? std::vector<int64_t>{1024} : std::vector<int64_t>{1024, 2048, 4096, 8192}) {
        const int64_t B = std::max<int64_t>(1, 16384 / T), H = 2048 / D;
        const Tensor q = device_uniform({B, T, H, D}, DType::bf16, 3),
                     k = device_uniform({B, T, H, D}, DType::bf16, 4),
                     v = device_uniform({B, T, H, D}, DType::bf16, 5),
                     dout = device_uniform({B, T, H, D}, DType::bf16, 6);
        AttentionOptions opts;
        opts.causal = true;
        const double flops = 4.0 * double(B * H) * double(T) * double(T) * double(D) / 2;
        const std::string shape = fmt::format("causal T={} D={} B={} H={} {}", T, D, B, H, impl);
        AttentionResult fwd;
        const double f_ms = median_ms(o.reps, [&] { fwd = attention(q, k, v, opts); });
        rows.push_back(
            {"attention", "fwd bf16 " + shape, f_ms, flops / (f_ms * 1e-3) * 1e-12, bf16_peak, "TFLOP/s"});
        print_row(rows.back());
        const double b_ms = median_ms(o.reps, [&] { attention_backward(dout, q, k, v, fwd, opts); });
        rows.push_back({"attention", "bwd bf16 " + shape, b_ms, 2.5 * flops / (b_ms * 1e-3) * 1e-12,
                        bf16_peak, "TFLOP/s"});
        print_row(rows.back());
      }
  }

  // Accuracy on one causal case (B 1, T 1024, H 4, D 128) against the f64 SIMT result on the same
  // inputs: each output's RMS error over that of the truth rounded to bf16 (1.0: as exact as a bf16
  // output can be). bench/cuda_pytorch.py reports the same ratios for PyTorch's backends.
  {
    const Tensor q = device_uniform({1, 1024, 4, 128}, DType::bf16, 11),
                 k = device_uniform({1, 1024, 4, 128}, DType::bf16, 12),
                 v = device_uniform({1, 1024, 4, 128}, DType::bf16, 13),
                 dout = device_uniform({1, 1024, 4, 128}, DType::bf16, 14);
    AttentionOptions opts;
    opts.causal = true;
    auto f64 = [](const Tensor& t) { return cast(t, DType::f64); };
    select::set_impl_overrides("attention:cuda.flash_simt,attention_backward:cuda.flash_simt");
    const AttentionResult truth = attention(f64(q), f64(k), f64(v), opts);
    const AttentionGradients truth_grad = attention_backward(f64(dout), f64(q), f64(k), f64(v), truth, opts);
    for (const char* impl : {"cuda.flash_mma", "cuda.flash_simt"}) {
      select::set_impl_overrides(fmt::format("attention:{},attention_backward:{}", impl, impl));
      const AttentionResult fwd = attention(q, k, v, opts);
      const AttentionGradients grad = attention_backward(dout, q, k, v, fwd, opts);
      for (const auto& [what, got, want] :
           {std::tuple{"out", fwd.out, truth.out}, std::tuple{"dq", grad.dq, truth_grad.dq},
            std::tuple{"dk", grad.dk, truth_grad.dk}, std::tuple{"dv", grad.dv, truth_grad.dv}}) {
        const double ratio = rms_difference(got, want) / rms_difference(cast(want, DType::bf16), want);
        rows.push_back({"accuracy", fmt::format("attention {} bf16 causal T=1024 D=128 {}", what, impl), 0,
                        ratio, 0, "x bf16 rounding"});
        print_row(rows.back());
      }
    }
  }
  select::set_impl_overrides(user_pins ? user_pins : "");

  // Memory-bound ops in bf16, bytes = inputs + outputs, against the copy bandwidth.
  const int64_t R = o.quick ? 8192 : 65536, C = 4096;
  auto memory_row = [&](const std::string& name, double bytes, const std::function<void()>& f) {
    const double ms = median_ms(o.reps, f);
    rows.push_back({"memory", name, ms, bytes / (ms * 1e-3) * 1e-9, copy, "GB/s"});
    print_row(rows.back());
  };
  {
    const Tensor x = device_uniform({R, C}, DType::bf16, 7), y = device_uniform({R, C}, DType::bf16, 8),
                 w = device_uniform({C}, DType::bf16, 9);
    const double n = double(R * C) * 2;  // bytes of one (R,C) bf16 tensor
    memory_row(fmt::format("add bf16 {}x{}", R, C), 3 * n, [&] { add(x, y); });
    memory_row(fmt::format("rms_norm bf16 {}x{}", R, C), 2 * n, [&] { rms_norm(x, w, 1e-6); });
    memory_row(fmt::format("softmax bf16 {}x{}", R, C), 2 * n, [&] { softmax(x, -1); });
    memory_row(fmt::format("swiglu bf16 {}x{}", R, C), 3 * n, [&] { swiglu(x, y); });
  }
  {
    const int64_t N = o.quick ? 1024 : 8192, V = 50304;
    const Tensor logits = device_uniform({N, V}, DType::bf16, 10);
    Tensor targets = Tensor::empty({N}, DType::i64);
    fill_randint(targets, {2026, 11, 0}, 0, V);
    const Tensor t = targets.to(kGpu);
    memory_row(fmt::format("cross_entropy bf16 {}x{}", N, V), 2.0 * double(N * V) * 2,
               [&] { cross_entropy(logits, t); });
  }

  std::string json = fmt::format(
      "{{\"bench\":\"cuda\",\"device\":\"{}\",\"copy_gb_s\":{:.1f},\"bf16_tflop_s\":{:.1f},\"rows\":[",
      p.name, copy, bf16_peak);
  for (size_t i = 0; i < rows.size(); ++i)
    json +=
        fmt::format("{}{{\"family\":\"{}\",\"case\":\"{}\",\"ms\":{:.4f},\"rate\":{:.2f},\"unit\":\"{}\"}}",
                    i ? "," : "", rows[i].family, rows[i].name, rows[i].ms, rows[i].rate, rows[i].unit);
  fmt::print("{}]}}\n", json);
  return 0;
}

}  // namespace dew::bench
