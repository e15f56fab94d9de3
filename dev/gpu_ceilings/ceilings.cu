// dev/: an exploration, never linked into Dew. Measures the H200 ceilings a CUDA backend will be held
// to: device-to-device copy bandwidth and cuBLAS GEMM rates (f32, tf32, bf16) on Dew's shapes.
// Random inputs (never zeros), events around the region, median of timed runs after warm-up.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                         \
  do {                                                                                   \
    auto e_ = (x);                                                                       \
    if (e_ != 0) {                                                                       \
      std::fprintf(stderr, "%s failed: %d at %s:%d\n", #x, int(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__global__ void fill_random(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = (float(h & 0xffffff) / 16777216.0f - 0.5f);
  }
}
__global__ void to_bf16(const float* s, __nv_bfloat16* d, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    d[i] = __float2bfloat16(s[i]);
}

template <class F>
float median_ms(F&& f, int warm, int reps) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warm; ++i) f();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CHECK(cudaEventRecord(a));
    f();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  // Copy: 4 GiB each way, bytes read + written.
  size_t bytes = size_t(4) << 30;
  void *src, *dst;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  fill_random<<<4096, 256>>>((float*)src, bytes / 4, 1);
  float ms = median_ms([&] { CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }, 3, 10);
  std::printf("d2d copy: %.0f GB/s (read+write)\n", 2.0 * bytes / ms * 1e-6);
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));

  cublasHandle_t h;
  CHECK(cublasCreate(&h));
  struct Shape {
    const char* name;
    int M, N, K;
  };
  Shape shapes[] = {{"square 8192", 8192, 8192, 8192},
                    {"gpt2 mlp_up 16384x3072x768", 16384, 3072, 768},
                    {"gpt2 qkv 16384x2304x768", 16384, 2304, 768},
                    {"llama8b mlp_up 4096x14336x4096", 4096, 14336, 4096},
                    {"llama8b qkv 4096x6144x4096", 4096, 6144, 4096}};
  std::printf("%-34s %10s %10s %10s  (TFLOP/s, median of 20)\n", "shape", "f32", "tf32", "bf16");
  for (const Shape& s : shapes) {
    size_t na = size_t(s.M) * s.K, nb = size_t(s.K) * s.N, nc = size_t(s.M) * s.N;
    float *A, *B, *C;
    __nv_bfloat16 *Ah, *Bh, *Ch;
    CHECK(cudaMalloc(&A, na * 4));
    CHECK(cudaMalloc(&B, nb * 4));
    CHECK(cudaMalloc(&C, nc * 4));
    CHECK(cudaMalloc(&Ah, na * 2));
    CHECK(cudaMalloc(&Bh, nb * 2));
    CHECK(cudaMalloc(&Ch, nc * 2));
    fill_random<<<4096, 256>>>(A, na, 2);
    fill_random<<<4096, 256>>>(B, nb, 3);
    to_bf16<<<4096, 256>>>(A, Ah, na);
    to_bf16<<<4096, 256>>>(B, Bh, nb);
    const float one = 1, zero = 0;
    double flop = 2.0 * s.M * s.N * s.K;
    // Row-major C = A B as column-major C^T = B^T A^T: weights as (N,K) => op(B) = T.
    auto gemm = [&](cudaDataType t, cublasComputeType_t ct, const void* a, const void* b, void* c) {
      CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, s.K, &one, b, t, s.K, a, t, s.K, &zero, c, t,
                         s.N, ct, CUBLAS_GEMM_DEFAULT));
    };
    float f32 = median_ms([&] { gemm(CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, A, B, C); }, 3, 20);
    float tf32 = median_ms([&] { gemm(CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, A, B, C); }, 3, 20);
    float bf = median_ms([&] { gemm(CUDA_R_16BF, CUBLAS_COMPUTE_32F, Ah, Bh, Ch); }, 3, 20);
    std::printf("%-34s %10.1f %10.1f %10.1f\n", s.name, flop / f32 * 1e-9, flop / tf32 * 1e-9,
                flop / bf * 1e-9);
    CHECK(cudaFree(A));
    CHECK(cudaFree(B));
    CHECK(cudaFree(C));
    CHECK(cudaFree(Ah));
    CHECK(cudaFree(Bh));
    CHECK(cudaFree(Ch));
  }
  CHECK(cublasDestroy(h));
  return 0;
}
