// An elementwise op timed in one process (the inputs drawn once, unlike `dew bench ops`): relu, neg,
// exp, add, mul, maximum or lt of N values drawn N(0, 2) (two inputs for the binary ops), or a GLU
// (swiglu, geglu and their _backward, gate, up and dy drawn the same), REPS calls; prints the min and
// median ms. POSITIVE=1 draws |x| (for log, sqrt, rsqrt and pow's bases). Build (after the project's build):
//   g++ -std=c++20 -O2 -Iinclude dev/map_time/time.cc -o /tmp/map_time build/libdew_ops.a
//   build/libdew_select.a build/libdew_core.a build/libdew_cuda.a -ldnnl -lfmt -fopenmp -ldl -lpthread
//   -L/usr/local/cuda/lib64 -lcudart_static -lrt
// Run: /tmp/map_time OP N f32|bf16|f16 REPS (the bench's gpt2_residual is 3145728, gpt2_mlp 12582912,
// the GLUs' llama8b_mlp 7340032 with ROWS=512).
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
  if (argc != 5) {
    fprintf(stderr,
            "usage: %s "
            "relu|neg|exp|log|sqrt|rsqrt|tanh|sigmoid|silu|gelu|gelu_tanh|add|mul|maximum|pow|lt|swiglu|"
            "geglu|geglu_tanh|swiglu_"
            "backward|geglu_backward N "
            "f32|bf16|f16 REPS\n",
            argv[0]);
    return 2;
  }
  const std::string op = argv[1];
  const int64_t n = atoll(argv[2]);
  const std::vector<int64_t> shape =
      getenv("ROWS") ? std::vector<int64_t>{atoll(getenv("ROWS")), n / atoll(getenv("ROWS"))}
                     : std::vector<int64_t>{n};
  const auto draw = [&](uint64_t stream) {
    Tensor t = Tensor::empty(shape, DType::f32);
    fill_normal(t, RandomKey{1, stream}, 0.0, 2.0);
    return cast(t, parse_dtype(argv[3]));
  };
  const Tensor a = getenv("POSITIVE") ? abs(draw(0)) : draw(0), b = draw(1), c = draw(2);
  const int reps = atoi(argv[4]);
  std::vector<double> ts;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor y = op == "relu"              ? relu(a)
                     : op == "neg"             ? neg(a)
                     : op == "exp"             ? exp(a)
                     : op == "log"             ? log(a)
                     : op == "sqrt"            ? sqrt(a)
                     : op == "rsqrt"           ? rsqrt(a)
                     : op == "tanh"            ? tanh(a)
                     : op == "sigmoid"         ? sigmoid(a)
                     : op == "silu"            ? silu(a)
                     : op == "gelu"            ? gelu(a)
                     : op == "gelu_tanh"       ? gelu(a, true)
                     : op == "add"             ? add(a, b)
                     : op == "mul"             ? mul(a, b)
                     : op == "maximum"         ? maximum(a, b)
                     : op == "pow"             ? pow(a, b)
                     : op == "swiglu"          ? swiglu(a, b)
                     : op == "geglu"           ? geglu(a, b)
                     : op == "geglu_tanh"      ? geglu(a, b, true)
                     : op == "swiglu_backward" ? swiglu_backward(c, a, b).d_gate
                     : op == "geglu_backward"  ? geglu_backward(c, a, b).d_gate
                                               : lt(a, b);
    ts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  printf("%s %s %lld: min %.3f median %.3f ms\n", op.c_str(), argv[3], (long long)n, ts[0],
         ts[ts.size() / 2]);
}
