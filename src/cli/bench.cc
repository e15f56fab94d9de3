// `dew bench WHAT`: the benchmarks of bench/ on the command line, each a table for people and one JSON
// line with the figures last.
#include "allreduce_bench.h"
#include "autodiff_bench.h"
#include "cli/commands.h"
#include "cuda_bench.h"
#include "data_bench.h"
#include "decode_bench.h"
#include "memory_bench.h"
#include "ops_bench.h"
#include "serve_bench.h"
#include "tokenize_bench.h"
#include "train_bench.h"

namespace dew::cli {

void add_bench(CLI::App& app, int& status) {
  auto* bench_cmd = app.add_subcommand("bench", "benchmarks: a table for people, one JSON line last");
  bench_cmd->require_subcommand(1);
  auto* bench_ops_cmd =
      bench_cmd->add_subcommand("ops", "every op's bench cases against this machine's ceilings");
  dew::bench::OpsBenchOptions& bench_ops = runs(bench_ops_cmd, status, dew::bench::run_ops_bench);
  bench_ops_cmd->add_option("--op", bench_ops.op, "only this op");
  bench_ops_cmd->add_option("--impl", bench_ops.implementation, "only this implementation");
  bench_ops_cmd->add_option("--dtype", bench_ops.dtype, "only this dtype (f64, f32, bf16, f16)");
  bench_ops_cmd->add_option("--reps", bench_ops.reps, "timed repetitions, at least")->default_val(5);
  bench_ops_cmd->add_option("--min-ms", bench_ops.min_ms, "and at least this many ms of timed calls a row")
      ->default_val(20);
  auto* bench_cuda_cmd = bench_cmd->add_subcommand(
      "cuda",
      "the CUDA backend on cuda:0: GEMM, attention and memory-bound ops against the device's ceilings");
  dew::bench::CudaBenchOptions& bench_cuda = runs(bench_cuda_cmd, status, dew::bench::run_cuda_bench);
  bench_cuda_cmd->add_option("--reps", bench_cuda.reps, "timed repetitions")->default_val(10);
  bench_cuda_cmd->add_flag("--quick", bench_cuda.quick, "the smallest shape of each family only");
  auto* bench_allreduce_cmd = bench_cmd->add_subcommand(
      "allreduce", "Dew's exact all-reduce over the ranks it runs as (dew launch -n 2 -- bench allreduce)");
  dew::bench::AllReduceBenchOptions& bench_allreduce =
      runs(bench_allreduce_cmd, status, dew::bench::run_allreduce_bench);
  bench_allreduce_cmd->add_option("--mib", bench_allreduce.mib, "MiB of f32 gradients a round")
      ->default_val(48);
  bench_allreduce_cmd->add_option("--bucket-mib", bench_allreduce.bucket_mib, "MiB per all-reduce")
      ->default_val(8);
  bench_allreduce_cmd->add_option("--rounds", bench_allreduce.rounds, "timed rounds")->default_val(10);
  auto* bench_autodiff_cmd =
      bench_cmd->add_subcommand("autodiff", "per-op cost of recording, backward and jvp at tiny shapes");
  dew::bench::AutodiffBenchOptions& bench_autodiff =
      runs(bench_autodiff_cmd, status, dew::bench::run_autodiff_bench);
  bench_autodiff_cmd->add_option("--ops", bench_autodiff.ops, "ops per timed chain")->default_val(20000);
  bench_autodiff_cmd->add_option("--reps", bench_autodiff.reps, "timed repetitions")->default_val(5);
  auto* bench_memory_cmd = bench_cmd->add_subcommand(
      "memory", "peak memory of a GPT-2-small forward + backward against llm.c's activation count");
  dew::bench::MemoryBenchOptions& bench_memory = runs(bench_memory_cmd, status, dew::bench::run_memory_bench);
  bench_memory_cmd->add_option("--layers", bench_memory.layers, "transformer blocks")->default_val(12);
  bench_memory_cmd->add_option("--batch", bench_memory.batch, "B")->default_val(4);
  bench_memory_cmd->add_option("--tokens", bench_memory.tokens, "T")->default_val(256);
  auto* bench_decode_cmd =
      bench_cmd->add_subcommand("decode",
                                "prefill and decode tokens/s of a Llama-shaped model against PyTorch and "
                                "llama.cpp, decode's weight bytes/s against triad");
  dew::bench::DecodeBenchOptions& bench_decode = runs(bench_decode_cmd, status, dew::bench::run_decode_bench);
  bench_decode_cmd->add_option("--layers", bench_decode.layers, "decoder layers")->default_val(12);
  bench_decode_cmd->add_option("--hidden", bench_decode.hidden, "hidden size (heads of 64)")
      ->default_val(768);
  bench_decode_cmd->add_option("--prompt", bench_decode.prompt, "prompt tokens")->default_val(512);
  bench_decode_cmd->add_option("--new-tokens", bench_decode.new_tokens, "decoded tokens")->default_val(32);
  bench_decode_cmd->add_flag("!--no-pytorch", bench_decode.pytorch,
                             "skip PyTorch's run of the same checkpoint");
  bench_decode_cmd->add_flag("!--no-llama-cpp", bench_decode.llama_cpp,
                             "skip llama.cpp's run of the same weights");
  auto* bench_serve_cmd = bench_cmd->add_subcommand(
      "serve",
      "the serving engine at 1, 8 and 32 concurrent requests: output tokens/s, latency, batching's gain");
  dew::bench::ServeBenchOptions& bench_serve = runs(bench_serve_cmd, status, dew::bench::run_serve_bench);
  bench_serve_cmd->add_option("model", bench_serve.model, "gpt2-124m, qwen3-0.6b, default or a TOML config")
      ->default_val("default");
  bench_serve_cmd->add_option("--precision", bench_serve.precision, "f32 or bf16 weights and KV cache")
      ->default_val("f32");
  bench_serve_cmd->add_option("--prompt", bench_serve.prompt, "prompt tokens per request")->default_val(128);
  bench_serve_cmd->add_option("--new-tokens", bench_serve.new_tokens, "tokens generated per request")
      ->default_val(64);
  bench_serve_cmd->add_option("--concurrency", bench_serve.concurrency, "levels of concurrent requests")
      ->default_val(std::vector<int64_t>{1, 8, 32});
  bench_serve_cmd->add_flag("--batch-invariant", bench_serve.batch_invariant,
                            "the engine's deterministic mode");
  bench_serve_cmd->add_flag("--profile", bench_serve.profile,
                            "time each level's steps by op, and what runs outside the ops");
  bench_serve_cmd
      ->add_option("--temperature", bench_serve.temperature, "each request's temperature (0: greedy)")
      ->default_val(0);
  bench_serve_cmd->add_option("--top-p", bench_serve.top_p, "each request's top-p")->default_val(1);
  auto* bench_tokenize_cmd = bench_cmd->add_subcommand(
      "tokenize", "encode MB/s on one core against tokenizers.js on the same text in the same run");
  dew::bench::TokenizeBenchOptions& bench_tokenize =
      runs(bench_tokenize_cmd, status, dew::bench::run_tokenize_bench);
  bench_tokenize_cmd
      ->add_option("--tokenizer", bench_tokenize.tokenizers,
                   "tokenizer directories (default: the four of tools/tokenizer-oracle)")
      ->allow_extra_args(false);
  bench_tokenize_cmd->add_option("--text", bench_tokenize.text,
                                 "a UTF-8 text file (default: the Brown corpus)");
  auto* bench_train_cmd = bench_cmd->add_subcommand(
      "train", "training steps of a model against PyTorch training the same architecture in the same run");
  dew::bench::TrainBenchOptions& bench_train = runs(bench_train_cmd, status, dew::bench::run_train_bench);
  bench_train_cmd
      ->add_option("model", bench_train.model,
                   "gpt2-124m, qwen3-0.6b, default (the default job's model) or a TOML config")
      ->default_val("gpt2-124m");
  bench_train_cmd->add_option("--batch", bench_train.batch, "B (default: 4 for gpt2-124m, else 8)");
  bench_train_cmd->add_option("--tokens", bench_train.tokens, "T")->default_val(256);
  bench_train_cmd->add_option("--steps", bench_train.steps, "timed steps per round, after a warm-up step")
      ->default_val(4);
  bench_train_cmd->add_option("--rounds", bench_train.rounds, "rounds, Dew and PyTorch alternating")
      ->default_val(2);
  bench_train_cmd->add_flag("!--no-pytorch", bench_train.pytorch, "skip PyTorch's run");
  bench_train_cmd->add_option("--precision", bench_train.precision, "f32, or bf16 (mixed precision)")
      ->default_val("f32");
  bench_train_cmd->add_option("--device", bench_train.device, "cpu, or cuda:N (Dew's side on that GPU)")
      ->default_val("cpu");
  auto* bench_data_cmd = bench_cmd->add_subcommand(
      "data",
      "the data chain on the Brown corpus: per-stage rates, and its time against the tokenizer alone");
  dew::bench::DataBenchOptions& bench_data = runs(bench_data_cmd, status, dew::bench::run_data_bench);
  bench_data_cmd->add_option("--tokenizer", bench_data.tokenizer, "a tokenizer (default: Llama 3's)");
  bench_data_cmd->add_option("--tokens", bench_data.T, "T, the packed window's tokens less one")
      ->default_val(1024);
  bench_data_cmd->add_option("--batch", bench_data.batch, "rows per batch")->default_val(8);
  bench_data_cmd->add_option("--reps", bench_data.reps, "best of this many runs")->default_val(5);
}

}  // namespace dew::cli
