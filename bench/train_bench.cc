// train_bench.h. Each round: Dew's steps in this process, then PyTorch's in a child process, each
// after one warm-up step; figures are min / median / max over every timed step of every round. After
// its timed steps Dew runs one step under its profiler each round, PyTorch one in the last round: the
// table of where the time goes. MFU is training_flops_per_token × tokens/s over this machine's sgemm
// rate measured in the same run, as `dew train` reports it.
#include "train_bench.h"

#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>
#include <fmt/core.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_models.h"
#include "ceilings.h"
#include "cuda_bench.h"
#include "io/command.h"
#include "models/families.h"

namespace dew::bench {
namespace {

constexpr const char* kJemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

struct Figures {
  std::vector<double> step_s;
  double peak_bytes = 0;  // Dew: its tensors' peak; both: the process's peak resident bytes below
  double max_rss_bytes = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Rows of T+1 ids from Philox, one document each (segment 1, positions from 0): a plain causal batch.
data::Batch random_batch(int64_t B, int64_t T, int64_t vocab, uint64_t index) {
  data::Batch batch;
  batch.index = int64_t(index);
  batch.tokens = Tensor::empty({B, T + 1}, DType::i64);
  fill_randint(batch.tokens, {.seed = 1, .stream = 0, .counter_base = index * uint64_t(B * (T + 1))}, 0,
               vocab);
  batch.segment_ids = Tensor::full({B, T + 1}, 1, DType::i64);
  std::vector<double> positions;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t <= T; ++t) positions.push_back(double(t));
  batch.positions = Tensor::from_values(positions, {B, T + 1}, DType::i64);
  batch.real_tokens = B * (T + 1);
  return batch;
}

std::string describe(const std::vector<double>& step_s, int64_t tokens_per_step, double flops_per_token,
                     double peak_flops) {
  const double best = *std::min_element(step_s.begin(), step_s.end());
  const double worst = *std::max_element(step_s.begin(), step_s.end());
  const double rate = double(tokens_per_step) / median(step_s);
  return fmt::format("{:>8.1f} {:>8.1f} {:>8.1f} {:>7.1f}%", double(tokens_per_step) / worst, rate,
                     double(tokens_per_step) / best, 100 * rate * flops_per_token / peak_flops);
}

// A GEMM row of the step profile ("role  M x N x K dtype [ta] [tb] [bias] [residual]") run alone
// through Dew's matmul on fresh operands: GFLOP/s, the median of 5 after one warm-up; 0 for a batched
// row or one with an activation (not rebuilt here).
double gemm_alone_gflop_s(const std::string& row) {
  const std::string label = row.substr(row.find("  ") + 2);
  std::vector<std::string> words;
  for (size_t start = 0; start < label.size();) {
    size_t end = label.find(' ', start);
    if (end == std::string::npos) end = label.size();
    words.push_back(label.substr(start, end - start));
    start = end + 1;
  }
  int64_t M = 0, N = 0, K = 0;
  if (words.size() < 2 || std::sscanf(words[0].c_str(), "%ldx%ldx%ld", &M, &N, &K) != 3) return 0;
  const DType dtype = parse_dtype(words[1]);
  MatmulOptions o;
  bool residual = false;
  for (size_t i = 2; i < words.size(); ++i) {
    if (words[i] == "ta")
      o.transpose_a = true;
    else if (words[i] == "tb")
      o.transpose_b = true;
    else if (words[i] == "bias")
      o.bias = Tensor::full({N}, 0.5, dtype);
    else if (words[i] == "residual")
      residual = true;
    else
      return 0;
  }
  auto operand = [&](int64_t rows, int64_t cols, uint64_t stream) {
    Tensor t = Tensor::empty({rows, cols}, dtype);
    fill_normal(t, {.seed = 3, .stream = stream}, 0, 1);
    return t;
  };
  const Tensor a = o.transpose_a ? operand(K, M, 1) : operand(M, K, 1);
  const Tensor b = o.transpose_b ? operand(N, K, 2) : operand(K, N, 2);
  if (residual) o.residual = operand(M, N, 3);
  std::vector<double> seconds;
  for (int rep = 0; rep <= 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    const Tensor c = matmul(a, b, o);
    if (rep > 0)
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * double(M) * double(N) * double(K) / median(seconds) / 1e9;
}

}  // namespace

int run_train_bench(const TrainBenchOptions& o) {
  const std::string model_json = bench_model_json(o.model, "train");
  DEW_REQUIRE(o.steps >= 1 && o.rounds >= 1 && o.tokens >= 1 && o.batch >= 0,
              "[bench train] --steps {}, --rounds {}, --tokens {}, --batch {}; expected positive counts",
              o.steps, o.rounds, o.tokens, o.batch);
  const int64_t B = o.batch ? o.batch : o.model == "gpt2-124m" ? 4 : 8, T = o.tokens;
  DEW_REQUIRE(o.precision == "f32" || o.precision == "bf16",
              "[bench train] --precision {}; expected f32 or bf16", o.precision);
  const DType compute = o.precision == "bf16" ? DType::bf16 : DType::f32;

  const Device device = Device::parse(o.device);
  const auto init_start = std::chrono::steady_clock::now();
  CausalLM model = CausalLM::init(parse_model_config(model_json, o.model), DType::f32, 0);
  const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();
  for (auto& [name, p] : model.parameters())
    if (!is_buffer(name)) p.requires_grad_();
  if (device.kind == Device::Kind::cuda) model = model.to(device);  // master weights, state and steps there
  const std::vector<train::Param> params = train::default_groups(model.parameters(), 0.1);
  std::unique_ptr<train::Optimizer> optimizer = train::make_adamw(params);
  const int64_t n = model.parameter_count();
  const double flops_per_token = train::training_flops_per_token(model, T);
  // MFU against this run's own rate: the host's sgemm, or the GPU's 8192^3 product in the compute dtype.
  const double peak_flops = train::peak_flops(device, compute);
  const int64_t vocab = model.config().vocab_size;
  // PyTorch's side (train_pytorch.py) is the CPU's; on a GPU Dew runs alone.
  const bool pytorch = o.pytorch && device.kind == Device::Kind::cpu &&
                       std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
  const bool jemalloc = std::filesystem::exists(kJemalloc);
  fmt::print(
      "train: {} ({:.1f} M parameters) on {}, B {} T {}, AdamW, {}, {} threads; {} timed steps x {} rounds; "
      "{:.0f} MFLOP/token; {} {:.1f} GFLOP/s; f32 weights initialized in {:.2f} s\n",
      o.model, double(n) / 1e6, device.str(), B, T, o.precision == "bf16" ? "bf16 mixed precision" : "f32",
      num_threads(), o.steps, o.rounds, flops_per_token / 1e6,
      device.kind == Device::Kind::cuda ? "gemm 8192^3" : "gemm 2048^3", peak_flops / 1e9, init_s);

  const std::string config_path =
      (std::filesystem::temp_directory_path() / fmt::format("dew_bench_train_{}.json", ::getpid())).string();
  std::ofstream(config_path) << models::model_config_json(model.config());  // every default written out
  Figures dew, torch;
  std::string torch_version, torch_error;
  uint64_t batch_index = 0;
  train::StepProfiler profiler;
  std::optional<train::StepProfile> torch_profile;
  for (int round = 0; round < o.rounds; ++round) {
    reset_peak_memory();
    for (int s = 0; s <= o.steps; ++s) {  // step 0 warms up
      std::optional<data::Batch> batch = random_batch(B, T, vocab, batch_index++);
      const auto start = std::chrono::steady_clock::now();
      const train::StepResult result =
          train::train_step(model, params, *optimizer, {.lr = 3e-4, .compute = compute},
                            [&] { return std::exchange(batch, std::nullopt); });
      DEW_REQUIRE(result.applied, "[bench train] step {}: loss {}, gradient norm {}", s, result.loss,
                  result.grad_norm);
      if (device.kind == Device::Kind::cuda) cuda_synchronize(device.index);  // the optimizer's queued work
      if (s > 0)
        dew.step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    {  // one more step with the op profile on, apart from the timed ones
      std::optional<data::Batch> batch = random_batch(B, T, vocab, batch_index++);
      profiler.begin_step();
      train::train_step(model, params, *optimizer, {.lr = 3e-4, .compute = compute},
                        [&] { return std::exchange(batch, std::nullopt); });
      if (device.kind == Device::Kind::cuda) cuda_synchronize(device.index);
      profiler.end_step();
    }
    dew.peak_bytes = std::max(
        dew.peak_bytes, double(device.kind == Device::Kind::cuda ? cuda_memory_stats(device.index).peak_bytes
                                                                 : cpu_memory_stats().peak_bytes));
    if (!pytorch) continue;
    const std::string command = fmt::format(
        "{}OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 {}/bench/train_pytorch.py {} {} {} {} {} {}{}",
        jemalloc ? fmt::format("LD_PRELOAD={} MALLOC_CONF=background_thread:true,dirty_decay_ms:-1,"
                               "muzzy_decay_ms:-1 ",
                               kJemalloc)
                 : "",
        DEW_SOURCE_DIR, config_path, B, T, o.steps, num_threads(), o.precision,
        round + 1 == o.rounds ? " profile" : "");  // the profiled step: once, in the last round
    const CommandResult python = run_command(command + " 2>&1");
    const std::string last = python.out.substr(python.out.rfind('\n', python.out.size() - 2) + 1);
    const nlohmann::json j = nlohmann::json::parse(python.exit_code == 0 ? last : "", nullptr, false);
    if (!j.is_object()) {
      torch_error = python.out;
      break;
    }
    for (double s : j["step_s"]) torch.step_s.push_back(s);
    torch.max_rss_bytes = std::max(torch.max_rss_bytes, j["max_rss_bytes"].get<double>());
    torch_version = j["torch"].get<std::string>();
    if (j.contains("profile")) torch_profile = train::step_profile_from_json(j["profile"].dump());
  }
  std::filesystem::remove(config_path);
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  dew.max_rss_bytes = double(usage.ru_maxrss) * 1024;

  const int64_t tokens_per_step = B * T;
  fmt::print("{:<16} {:>8} {:>8} {:>8} {:>8} {:>16} {:>12}\n", "system", "min", "median", "max", "MFU",
             "tensor peak MiB", "peak RSS MiB");
  fmt::print("{:<16} {} {:>16.0f} {:>12.0f}   (tokens/s)\n", "dew",
             describe(dew.step_s, tokens_per_step, flops_per_token, peak_flops), dew.peak_bytes / (1 << 20),
             dew.max_rss_bytes / (1 << 20));
  std::string torch_json = "null";
  if (!torch.step_s.empty()) {
    const double ratio = median(torch.step_s) / median(dew.step_s);
    fmt::print("{:<16} {} {:>16} {:>12.0f}   (PyTorch {}{})\n", "pytorch",
               describe(torch.step_s, tokens_per_step, flops_per_token, peak_flops), "",
               torch.max_rss_bytes / (1 << 20), torch_version, jemalloc ? ", jemalloc" : ", no jemalloc");
    fmt::print("dew / pytorch: {:.2f}x (median tokens/s)\n", ratio);
    torch_json = fmt::format(
        R"({{"version":"{}","tokens_per_s":{:.2f},"max_rss_bytes":{:.0f},"ratio":{:.3f},"profile":{}}})",
        torch_version, double(tokens_per_step) / median(torch.step_s), torch.max_rss_bytes, ratio,
        torch_profile ? train::step_profile_json(*torch_profile) : "null");
  } else if (o.pytorch && device.kind == Device::Kind::cuda) {
    fmt::print("(no PyTorch comparison on {}: train_pytorch.py is the CPU's)\n", device.str());
  } else if (o.pytorch) {
    fmt::print("(no PyTorch comparison: {})\n",
               pytorch ? "train_pytorch.py failed:\n" + torch_error : "apt-get install python3-torch");
  }
  const train::StepProfile dew_profile = profiler.result(vocab);
  fmt::print("{}",
             train::format_step_profiles(dew_profile, torch_profile ? &*torch_profile : nullptr, "pytorch"));
  if (device.kind == Device::Kind::cpu) {  // each of Dew's GEMMs in the step against the same GEMM alone
    fmt::print("Dew's GEMMs in the step and alone (GFLOP/s)\n");
    for (const train::StepProfile::Row& g : dew_profile.gemms)
      if (g.seconds > 0)
        fmt::print("  {:<48} {:>8.1f} {:>8.1f}\n", g.name, g.flops / g.seconds / 1e9,
                   gemm_alone_gflop_s(g.name));
  }
  const double rate = double(tokens_per_step) / median(dew.step_s);
  fmt::print(
      R"({{"bench":"train","model":"{}","precision":"{}","B":{},"T":{},"parameters":{},"tokens_per_s":{:.2f},"mfu":{:.4f},"sgemm_gflop_s":{:.1f},"init_s":{:.3f},"peak_bytes":{:.0f},"max_rss_bytes":{:.0f},"profile":{},"pytorch":{}}})"
      "\n",
      o.model, o.precision, B, T, n, rate, rate * flops_per_token / peak_flops, peak_flops / 1e9, init_s,
      dew.peak_bytes, dew.max_rss_bytes, train::step_profile_json(dew_profile), torch_json);
  return 0;
}

}  // namespace dew::bench
