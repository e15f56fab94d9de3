// cross_entropy timed in one process (no input draw per call, unlike `dew bench ops`): N rows of V
// logits drawn N(0, 2), targets 0, REPS calls; prints the min and median. Build (after the project's build):
//   g++ -std=c++20 -O2 -Iinclude dev/cross_entropy_time/time.cc -o /tmp/ce_time build/libdew_ops.a
//   build/libdew_select.a build/libdew_core.a build/libdew_cuda.a -ldnnl -lfmt -fopenmp -ldl -lpthread
//   -L/usr/local/cuda/lib64 -lcudart_static -lrt
// Run: /tmp/ce_time N V f32|bf16|f16 REPS (the bench's case: 1024 50257).
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/tensor.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace dew;
int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s N V f32|bf16|f16 REPS\n", argv[0]);
    return 2;
  }
  const int64_t N = atoll(argv[1]), V = atoll(argv[2]);
  const DType dt = parse_dtype(argv[3]);
  Tensor x = Tensor::empty({N, V}, DType::f32);
  fill_normal(x, RandomKey{1, 0}, 0.0, 2.0);
  x = cast(x, dt);
  Tensor t = Tensor::zeros({N}, DType::i64);
  const int reps = atoi(argv[4]);
  std::vector<double> ts;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto res = cross_entropy(x, t);
    ts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  printf("N %ld V %ld %s: min %.3f med %.3f ms, %.3f ns/logit/thread\n", N, V, argv[3], ts[0],
         ts[ts.size() / 2], ts[ts.size() / 2] * 1e6 / (N * V) * 2);
}
