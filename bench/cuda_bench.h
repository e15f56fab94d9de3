// `dew bench cuda`: the CUDA backend on cuda:0 against the device's own ceilings measured in the same
// run (device-to-device copy bandwidth; the bf16 rate of an 8192^3 product): GEMM TFLOP/s, attention
// forward and backward TFLOP/s (causal, D 64 and 128, T 1024-8192), memory-bound ops in GB/s. A table
// for people, one JSON line last. bench/cuda_pytorch.py measures PyTorch on the same shapes.
#pragma once

#include <dew/tensor.h>

namespace dew::bench {

struct CudaBenchOptions {
  int reps = 10;
  bool quick = false;  // the smallest shape of each family only (a smoke run)
};
int run_cuda_bench(const CudaBenchOptions& options);

// Dew's matmul (cuBLASLt) on `device` for an (M,K) x (K,N) product of uniform draws in `dtype`:
// milliseconds, the median of `reps` timed with CUDA events after a warm-up.
double gpu_gemm_ms(Device device, DType dtype, int64_t M, int64_t N, int64_t K, int reps);

}  // namespace dew::bench
