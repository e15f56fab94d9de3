// Exploration, not linked: the attention backward's five GEMM shapes (query block 128, key block 256,
// D 64, leading dimensions of a [B,T,H,D] tensor) on one thread, oneDNN's sgemm against its matmul
// primitive created once per shape (strides as memory descriptors, execute per call). Build:
//   g++ -std=c++20 -O2 dev/attention_gemm/gemm_ab.cc -ldnnl -o /tmp/gemm_ab
// Run: OMP_NUM_THREADS=1 /tmp/gemm_ab
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using dnnl::memory;

struct Shape {
  const char* name;
  char ta, tb;
  int64_t M, N, K, lda, ldb, ldc;
  float beta;
};

template <class F>
double gflops(F f, const Shape& s) {
  for (int i = 0; i < 20; ++i) f();
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 200);
  }
  return 2.0 * s.M * s.N * s.K / best * 1e-9;
}

int main() {
  const int64_t QB = 128, KB = 256, D = 64, H = 12, ld = H * D;
  const Shape shapes[] = {
      {"S = Q K^T     ", 'N', 'T', QB, KB, D, ld, ld, KB, 0.0f},
      {"dP = dO V^T   ", 'N', 'T', QB, KB, D, ld, ld, KB, 0.0f},
      {"dV += P^T dO  ", 'T', 'N', KB, D, QB, KB, ld, D, 1.0f},
      {"dQ += dS K    ", 'N', 'N', QB, D, KB, KB, ld, ld, 1.0f},
      {"dK += dS^T Q  ", 'T', 'N', KB, D, QB, KB, ld, D, 1.0f},
  };
  std::vector<float> A(1 << 20, 0.01f), B(1 << 20, 0.02f), C(1 << 20, 0.0f);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const Shape& s : shapes) {
    const double sg = gflops(
        [&] {
          dnnl_sgemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), s.lda, B.data(), s.ldb, s.beta, C.data(), s.ldc);
        },
        s);
    // Row-major op(A) (M,K): 'N' strides (lda, 1), 'T' strides (1, lda); likewise B (K,N).
    const memory::desc a_md({s.M, s.K}, memory::data_type::f32,
                            s.ta == 'N' ? memory::dims{s.lda, 1} : memory::dims{1, s.lda});
    const memory::desc b_md({s.K, s.N}, memory::data_type::f32,
                            s.tb == 'N' ? memory::dims{s.ldb, 1} : memory::dims{1, s.ldb});
    const memory::desc c_md({s.M, s.N}, memory::data_type::f32, {s.ldc, 1});
    dnnl::primitive_attr attr;
    if (s.beta != 0) {
      dnnl::post_ops po;
      po.append_sum(1.0f);
      attr.set_post_ops(po);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine);
    dnnl::matmul prim(pd);
    memory a_mem(a_md, engine, A.data()), b_mem(b_md, engine, B.data()), c_mem(c_md, engine, C.data());
    const double mm = gflops(
        [&] {
          prim.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
        },
        s);
    printf("%s sgemm %6.1f  matmul %6.1f GFLOP/s  (%s)\n", s.name, sg, mm, pd.impl_info_str());
  }
  const Shape big{"2048^3", 'N', 'N', 2048, 2048, 2048, 2048, 2048, 2048, 0.0f};
  std::vector<float> X(2048 * 2048, 0.01f), Y(2048 * 2048, 0.02f), Z(2048 * 2048);
  printf("sgemm 2048^3 %.1f GFLOP/s\n",
         gflops([&] { dnnl_sgemm('N', 'N', 2048, 2048, 2048, 1.0f, X.data(), 2048, Y.data(), 2048, 0.0f, Z.data(), 2048); },
                big) );
}
