// A row op over the last axis timed in one process (the input drawn once, unlike `dew bench ops`):
// logsumexp, softmax, sum, rms_norm or layer_norm of N rows of V values drawn N(0, 2) (or logsumexp and
// sum down the columns), REPS calls; prints the min and median ms. Build (after the project's build):
//   g++ -std=c++20 -O2 -Iinclude dev/row_time/time.cc -o /tmp/row_time build/libdew_ops.a
//   build/libdew_select.a build/libdew_core.a build/libdew_cuda.a -ldnnl -lfmt -fopenmp -ldl -lpthread
//   -L/usr/local/cuda/lib64 -lcudart_static -lrt
// Run: /tmp/row_time
// logsumexp|softmax|sum|sum_columns|logsumexp_columns|rms_norm|layer_norm|layer_norm_backward N V
// f32|bf16|f16 REPS (the bench's cases: 4096 768; 49152 1024).
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/tensor.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
using namespace dew;
int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr,
            "usage: %s "
            "logsumexp|softmax|sum|sum_columns|logsumexp_columns|rms_norm|layer_norm|layer_norm_backward N V "
            "f32|bf16|f16 REPS\n",
            argv[0]);
    return 2;
  }
  const std::string op = argv[1];
  const int64_t N = atoll(argv[2]), V = atoll(argv[3]);
  Tensor x = Tensor::empty({N, V}, DType::f32);
  fill_normal(x, RandomKey{1, 0}, 0.0, 2.0);
  x = cast(x, parse_dtype(argv[4]));
  Tensor w = Tensor::empty({V}, DType::f32);
  fill_normal(w, RandomKey{1, 1}, 1.0, 0.1);
  w = cast(w, parse_dtype(argv[4]));
  const int reps = atoi(argv[5]);
  Tensor dy = Tensor::empty({N, V}, DType::f32);  // for layer_norm_backward, as the bench's case draws it
  fill_normal(dy, RandomKey{1, 2}, 0.0, 1.0);
  dy = cast(dy, parse_dtype(argv[4]));
  const LayerNormResult forward = layer_norm(x, w, w, 1e-5);
  std::vector<double> ts;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    Tensor y = op == "rms_norm"              ? rms_norm(x, w, 1e-5)
               : op == "layer_norm"          ? layer_norm(x, w, w, 1e-5).y
               : op == "layer_norm_backward" ? layer_norm_backward(dy, x, w, forward).dx
               : op == "softmax"             ? softmax(x, -1)
               : op == "logsumexp"           ? logsumexp(x, {-1})
               : op == "sum"                 ? sum(x, {-1})
               : op == "sum_columns"         ? sum(x, {0})
                                             : logsumexp(x, {0});
    ts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  printf("%s %s %lldx%lld: min %.3f median %.3f ms\n", op.c_str(), argv[4], (long long)N, (long long)V, ts[0],
         ts[ts.size() / 2]);
}
