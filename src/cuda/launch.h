// For files that call CUDA directly (kernels in .cu, the runtime in .cc): CUDA's headers, each
// device's compute stream, and the checks after every call and every launch. Kernel files stay free
// of fmt (nvcc cannot compile its consteval format strings), so the message is built in runtime.cc.
#pragma once

#include <cuda_runtime.h>

#include "cuda/runtime.h"

namespace dew::cuda {

// Throws dew::Error naming the call or kernel that failed, where, and CUDA's own message.
[[noreturn]] void fail_call(cudaError_t error, const char* what, const char* file, int line);

inline void check(cudaError_t error, const char* what, const char* file, int line) {
  if (error != cudaSuccess) fail_call(error, what, file, line);
}

// Makes `device` this thread's current device (cudaSetDevice only when it differs).
void use_device(int device);

inline cudaStream_t stream_of(int device) {
  return static_cast<cudaStream_t>(stream(device));
}

// Blocks of `threads` covering n items, capped so the grid stays inside CUDA's limit (kernels loop
// with a grid stride past the cap).
inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : (blocks > (int64_t(1) << 20) ? (int64_t(1) << 20) : blocks));
}

}  // namespace dew::cuda

#define DEW_CUDA_CHECK(call) ::dew::cuda::check((call), #call, __FILE__, __LINE__)
// After every launch: a launch error (bad configuration, no kernel image for this device) surfaces here.
#define DEW_CUDA_CHECK_LAUNCH(kernel) ::dew::cuda::check(cudaGetLastError(), kernel, __FILE__, __LINE__)
