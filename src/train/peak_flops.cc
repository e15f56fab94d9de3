// train.h's peak_flops: the rate MFU is measured against, timed through Dew's own matmul, so that it is
// the product a training step's matrices actually run (oneDNN on a CPU, cuBLASLt on a GPU).
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace dew::train {

namespace {

double product_rate(Device device, DType compute, int64_t n) {
  const bool gpu = device.kind == Device::Kind::cuda;
  Tensor a = Tensor::empty({n, n}, compute), b = Tensor::empty({n, n}, compute);
  fill_uniform(a, {0x9e3779b9, 1}, -1, 1);
  fill_uniform(b, {0x9e3779b9, 2}, -1, 1);
  if (gpu) a = a.to(device), b = b.to(device);
  const auto wait = [&] {
    if (gpu) cuda_synchronize(device.index);
  };
  double best = 1e30;
  for (int rep = 0; rep < 4; ++rep) {  // the first is warm-up (JIT, caches, pages)
    wait();
    const auto start = std::chrono::steady_clock::now();
    const Tensor c = matmul(a, b);
    wait();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rep > 0) best = std::min(best, seconds);
  }
  return 2.0 * double(n) * double(n) * double(n) / best;
}

}  // namespace

double peak_flops(Device device, DType compute) {
  // Under a memory limit (DEW_MEMORY_LIMIT) too small for the product's three matrices, a smaller
  // product; none fits: 0, and no MFU is reported — the measurement never stops a run.
  const std::vector<int64_t> sizes = device.kind == Device::Kind::cuda
                                         ? std::vector<int64_t>{8192, 2048}
                                         : std::vector<int64_t>{2048, 1024, 512};
  for (const int64_t n : sizes) {
    try {
      return product_rate(device, compute, n);
    } catch (const OutOfMemory&) {
    }
  }
  return 0;
}

}  // namespace dew::train
