// Compares the CPU GEMM libraries Debian offers on the shapes Dew runs (GPT-2 small and Llama-3-8B
// layers): OpenBLAS (cblas_sgemm), BLIS (bli_sgemm) and oneDNN 2.6 (dnnl_sgemm), f32, row-major,
// alternating libraries after warm-up. Not part of the product: it decides which one matmul links.
// Usage: blas_compare [reps]   (threads: OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, OMP_NUM_THREADS)
#include <blis.h>
#include <cblas.h>
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Shape {
  const char* name;
  int M, N, K;
  bool transpose_b;  // weights stored (N, K) as in nn.Linear
};

double seconds(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::vector<Shape> shapes = {
      {"gpt2 qkv 4096x2304x768", 4096, 2304, 768, true},
      {"gpt2 mlp_up 4096x3072x768", 4096, 3072, 768, true},
      {"gpt2 mlp_down 4096x768x3072", 4096, 768, 3072, true},
      {"gpt2 attn_proj 4096x768x768", 4096, 768, 768, true},
      {"llama8b qkv 512x6144x4096", 512, 6144, 4096, true},
      {"llama8b mlp_up 512x14336x4096", 512, 14336, 4096, true},
      {"llama8b mlp_down 512x4096x14336", 512, 4096, 14336, true},
      {"square 2048", 2048, 2048, 2048, false},
  };
  fmt::print("{:<34} {:>22} {:>22} {:>22}\n", "shape (GFLOP/s min/med/max)", "openblas", "blis", "onednn");
  std::string json = "{\"bench\":\"blas_compare\",\"unit\":\"GFLOP/s median\",\"shapes\":[";
  for (size_t si = 0; si < shapes.size(); ++si) {
    const Shape& s = shapes[si];
    std::vector<float> A(size_t(s.M) * s.K, 0.5f), B(size_t(s.K) * s.N, 0.25f), C(size_t(s.M) * s.N);
    const int ldb = s.transpose_b ? s.K : s.N;
    const double flop = 2.0 * s.M * s.N * s.K;
    std::vector<std::function<void()>> libs = {
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, s.transpose_b ? CblasTrans : CblasNoTrans, s.M, s.N, s.K,
                      1.0f, A.data(), s.K, B.data(), ldb, 0.0f, C.data(), s.N);
        },
        [&] {
          float alpha = 1, beta = 0;
          inc_t rsb = s.transpose_b ? 1 : s.N, csb = s.transpose_b ? s.K : 1;
          bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s.M, s.N, s.K, &alpha, A.data(), s.K, 1, B.data(),
                    rsb, csb, &beta, C.data(), s.N, 1);
        },
        [&] {
          dnnl_sgemm('N', s.transpose_b ? 'T' : 'N', s.M, s.N, s.K, 1.0f, A.data(), s.K, B.data(), ldb, 0.0f,
                     C.data(), s.N);
        },
    };
    std::vector<std::vector<double>> rates(libs.size());
    for (auto& f : libs) f();  // warm-up
    for (int r = 0; r < reps; ++r)
      for (size_t l = 0; l < libs.size(); ++l) rates[l].push_back(flop / seconds(libs[l]) * 1e-9);
    fmt::print("{:<34}", s.name);
    json += fmt::format("{}{{\"shape\":\"{}\"", si ? "," : "", s.name);
    const char* names[] = {"openblas", "blis", "onednn"};
    for (size_t l = 0; l < libs.size(); ++l) {
      auto v = rates[l];
      std::sort(v.begin(), v.end());
      fmt::print(" {:>6.1f}/{:>6.1f}/{:>6.1f}", v.front(), v[v.size() / 2], v.back());
      json += fmt::format(",\"{}\":{:.1f}", names[l], v[v.size() / 2]);
    }
    json += "}";
    fmt::print("\n");
  }
  fmt::print("{}]}}\n", json);
}
