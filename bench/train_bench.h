// `dew bench train MODEL`: training steps of a named model (gpt2-124m at B=4, T=256; default, the
// default job's model at B=8, T=256; or a TOML config's [model]) through train_step — what `dew train`
// runs — in tokens/s, MFU and peak memory, and the same steps of the identical architecture in PyTorch
// (bench/train_pytorch.py, at its best: jemalloc, passive OpenMP waits) in the same run, alternating
// rounds; prints the ratio. A table, then one JSON line.
#pragma once

#include <cstdint>
#include <string>

namespace dew::bench {

struct TrainBenchOptions {
  std::string model = "gpt2-124m";
  int64_t batch = 0, tokens = 256;  // B (0: the model's: 4 for gpt2-124m, else 8) and T
  int steps = 4, rounds = 2;        // timed steps per round (after one warm-up step); rounds alternate
  bool pytorch = true;
  std::string precision = "f32";  // or bf16: mixed precision (PyTorch: autocast to bf16)
  std::string device = "cpu";     // or cuda:N: Dew's side on that GPU (PyTorch's side is the CPU script)
};
int run_train_bench(const TrainBenchOptions& options);

}  // namespace dew::bench
