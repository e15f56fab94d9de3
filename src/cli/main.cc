// The dew command: a thin layer over the library. Exit codes: 0 success, 1 user error (dew::Error,
// message on stderr), 2 usage error.
#include <dew/error.h>
#include <CLI/CLI.hpp>

#include "autodiff_bench.h"
#include "cli/commands.h"
#include "cuda_bench.h"
#include "data_bench.h"
#include "decode_bench.h"
#include "memory_bench.h"
#include "ops_bench.h"
#include "tokenize_bench.h"
#include "train_bench.h"

int main(int argc, char** argv) {
  CLI::App app{"dew: train and serve language and diffusion models"};
  app.require_subcommand(1);
  dew::cli::CheckOptions check;
  auto* check_cmd =
      app.add_subcommand("check", "run the float64 gate over every op, implementation, dtype and case");
  check_cmd->add_option("--op", check.op, "only this op");
  check_cmd->add_option("--impl", check.implementation,
                        "only this implementation, or a backend's (cuda: every cuda.* implementation)");
  check_cmd->add_option("--dtype", check.dtype, "only this dtype (f64, f32, bf16, f16)");
  check_cmd->add_option("--tag", check.tag, "cases with this tag")->default_val("ci");
  check_cmd->add_option("--seed", check.seed, "replay a seed printed by a failure");
  check_cmd->add_flag("--forward-only", check.forward_only,
                      "only the implementations' outputs (no rule rows, no float64 derivative rows)");
  auto* ops_cmd = app.add_subcommand("ops", "print the support matrix: ops x implementations x requirements");
  bool markdown = false;
  ops_cmd->add_flag("--markdown", markdown, "as the Markdown of docs/ops.md");
  std::string inspect_path;
  bool inspect_jsonl = false;
  auto* inspect_cmd = app.add_subcommand(
      "inspect", "what a safetensors file or checkpoint directory holds: tensors, dtypes, shapes");
  inspect_cmd
      ->add_option("path", inspect_path,
                   "a .safetensors file, or a directory with model.safetensors[.index.json]")
      ->required();
  inspect_cmd->add_flag("--jsonl", inspect_jsonl, "one JSON object per tensor instead of the table");
  dew::cli::ScoreOptions score;
  auto* score_cmd = app.add_subcommand(
      "score", "log-likelihoods: JSONL {\"context\", \"continuation\"} in, lm-eval's loglikelihood out");
  score_cmd->add_option("--model", score.model, "a Hugging Face model directory (config.json + safetensors)")
      ->required();
  score_cmd->add_flag("--ids", score.ids, "read {\"ids\": [...]} and write per-token log-probabilities");
  score_cmd->add_option("--dtype", score.dtype, "cast the weights (f64, f32, bf16); default: the config's");
  dew::cli::GenerateOptions gen;
  auto* generate_cmd = app.add_subcommand("generate", "continue a prompt, streaming the text to stdout");
  generate_cmd->add_option("--model", gen.model, "a Hugging Face model directory with its tokenizer")
      ->required();
  generate_cmd->add_option("--prompt", gen.prompt, "the text to continue (BOS added as the tokenizer says)")
      ->required();
  generate_cmd->add_option("--max-new-tokens", gen.max_new_tokens, "at most this many tokens")
      ->default_val(256);
  generate_cmd->add_option("--seed", gen.seed, "the sampling seed (same seed, same text)")->default_val(0);
  generate_cmd->add_option("--temperature", gen.temperature, "0: greedy (default: generation_config.json's)");
  generate_cmd->add_option("--top-k", gen.top_k, "keep the k likeliest tokens (0: off)");
  generate_cmd->add_option("--top-p", gen.top_p, "keep the smallest set of probability >= p");
  generate_cmd->add_option("--min-p", gen.min_p, "drop tokens below min_p x the likeliest's probability");
  generate_cmd->add_option("--repetition-penalty", gen.repetition_penalty, "divide seen tokens' logits (>1)");
  generate_cmd->add_option("--stop", gen.stop, "stop before this text (repeatable)");
  generate_cmd->add_option("--dtype", gen.dtype, "cast the weights (f64, f32, bf16); default: the config's");
  generate_cmd->add_flag("--chat", gen.chat, "send the prompt as a user message through the chat template");
  generate_cmd->add_option("--system", gen.system, "with --chat: a system message before the prompt");
  generate_cmd->add_option("--assistant-start", gen.assistant_start,
                           "with --chat: the beginning of the reply, which the model continues");
  generate_cmd->add_option("--chat-var", gen.chat_vars,
                           "with --chat: a template variable KEY=VALUE, VALUE as JSON if it parses "
                           "(enable_thinking=false); repeatable");
  dew::cli::TokenizeOptions tokenize;
  auto* tokenize_cmd = app.add_subcommand(
      "tokenize", "JSONL strings in, one JSON array of token ids per line out (--decode: the other way)");
  tokenize_cmd->add_option("--tokenizer", tokenize.tokenizer, "a tokenizer.json, or a directory holding one")
      ->required();
  auto* special_flag = tokenize_cmd->add_flag("--special", tokenize.special,
                                              "add the special tokens of the post-processor (BOS, ...)");
  auto* decode_flag =
      tokenize_cmd->add_flag("--decode", tokenize.decode, "read arrays of ids, write strings");
  tokenize_cmd->add_flag("--skip-special", tokenize.skip_special, "with --decode: leave special tokens out");
  tokenize_cmd
      ->add_flag("--chat", tokenize.chat,
                 "read conversations {\"messages\": [...], \"tools\", \"add_generation_prompt\", ...} "
                 "and write the ids of their chat-template prompts (the template writes the special tokens)")
      ->excludes(special_flag)
      ->excludes(decode_flag);
  auto* tokenizer_cmd = app.add_subcommand("tokenizer", "tokenizer tools");
  tokenizer_cmd->require_subcommand(1);
  dew::cli::TokenizerTrainOptions tokenizer_train;
  auto* tokenizer_train_cmd = tokenizer_cmd->add_subcommand(
      "train",
      "learn a byte-level BPE from text files; writes a tokenizer.json the Hugging Face tokenizers load");
  tokenizer_train_cmd->add_option("files", tokenizer_train.files, "text files (UTF-8), each one document")
      ->required();
  tokenizer_train_cmd->add_option("--output", tokenizer_train.output, "the directory to write")->required();
  tokenizer_train_cmd->add_flag("--force", tokenizer_train.force, "overwrite a tokenizer.json in --output");
  tokenizer_train_cmd->add_option("--vocab-size", tokenizer_train.vocab_size, "tokens in all")
      ->default_val(8192);
  tokenizer_train_cmd
      ->add_option("--min-frequency", tokenizer_train.min_frequency, "fewest sightings of a merged pair")
      ->default_val(2);
  tokenizer_train_cmd->add_option("--special", tokenizer_train.special_tokens,
                                  "special tokens, after the merges (the first is also the EOS)");
  auto* bench_cmd = app.add_subcommand("bench", "benchmarks: a table for people, one JSON line last");
  bench_cmd->require_subcommand(1);
  dew::bench::OpsBenchOptions bench_ops;
  auto* bench_ops_cmd =
      bench_cmd->add_subcommand("ops", "every op's bench cases against this machine's ceilings");
  bench_ops_cmd->add_option("--op", bench_ops.op, "only this op");
  bench_ops_cmd->add_option("--impl", bench_ops.implementation, "only this implementation");
  bench_ops_cmd->add_option("--dtype", bench_ops.dtype, "only this dtype");
  bench_ops_cmd->add_option("--reps", bench_ops.reps, "timed repetitions, at least")->default_val(5);
  bench_ops_cmd->add_option("--min-ms", bench_ops.min_ms, "and at least this many ms of timed calls a row")
      ->default_val(20);
  dew::bench::CudaBenchOptions bench_cuda;
  auto* bench_cuda_cmd = bench_cmd->add_subcommand(
      "cuda",
      "the CUDA backend on cuda:0: GEMM, attention and memory-bound ops against the device's ceilings");
  bench_cuda_cmd->add_option("--reps", bench_cuda.reps, "timed repetitions")->default_val(10);
  bench_cuda_cmd->add_flag("--quick", bench_cuda.quick, "the smallest shape of each family only");
  dew::bench::AutodiffBenchOptions bench_autodiff;
  auto* bench_autodiff_cmd =
      bench_cmd->add_subcommand("autodiff", "per-op cost of recording, backward and jvp at tiny shapes");
  bench_autodiff_cmd->add_option("--ops", bench_autodiff.ops, "ops per timed chain")->default_val(20000);
  bench_autodiff_cmd->add_option("--reps", bench_autodiff.reps, "timed repetitions")->default_val(5);
  dew::bench::MemoryBenchOptions bench_memory;
  auto* bench_memory_cmd = bench_cmd->add_subcommand(
      "memory", "peak memory of a GPT-2-small forward + backward against llm.c's activation count");
  bench_memory_cmd->add_option("--layers", bench_memory.layers, "transformer blocks")->default_val(12);
  bench_memory_cmd->add_option("--batch", bench_memory.batch, "B")->default_val(4);
  bench_memory_cmd->add_option("--tokens", bench_memory.tokens, "T")->default_val(256);
  dew::bench::DecodeBenchOptions bench_decode;
  auto* bench_decode_cmd = bench_cmd->add_subcommand(
      "decode", "prefill and decode tokens/s of a Llama-shaped model, decode's weight bytes/s against triad");
  bench_decode_cmd->add_option("--layers", bench_decode.layers, "decoder layers")->default_val(12);
  bench_decode_cmd->add_option("--hidden", bench_decode.hidden, "hidden size (heads of 64)")
      ->default_val(768);
  bench_decode_cmd->add_option("--prompt", bench_decode.prompt, "prompt tokens")->default_val(512);
  bench_decode_cmd->add_option("--new-tokens", bench_decode.new_tokens, "decoded tokens")->default_val(32);
  bench_decode_cmd->add_flag("!--no-pytorch", bench_decode.pytorch,
                             "skip PyTorch's run of the same checkpoint");
  dew::bench::TokenizeBenchOptions bench_tokenize;
  auto* bench_tokenize_cmd = bench_cmd->add_subcommand(
      "tokenize", "encode MB/s on one core against tokenizers.js on the same text in the same run");
  bench_tokenize_cmd->add_option("--tokenizer", bench_tokenize.tokenizers,
                                 "tokenizer directories (default: the four of tools/tokenizer-oracle)");
  bench_tokenize_cmd->add_option("--text", bench_tokenize.text,
                                 "a UTF-8 text file (default: the Brown corpus)");
  dew::bench::TrainBenchOptions bench_train;
  auto* bench_train_cmd = bench_cmd->add_subcommand(
      "train", "training steps of a model against PyTorch training the same architecture in the same run");
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
  dew::cli::TrainOptions train;
  auto* train_cmd =
      app.add_subcommand("train", "train a config's model on its data, resuming a run directory");
  train_cmd->add_option(
      "config", train.config,
      "a TOML config: [model], [train], [optimizer], [schedule], [data]; none: the default job "
      "(examples/default.toml)");
  train_cmd->add_option("--run-dir", train.run_dir,
                        "where metrics and checkpoints go (default: runs/CONFIG_NAME)");
  train_cmd->add_option("--set", train.overrides, "override a config key: train.steps=200 (repeatable)");
  train_cmd->add_option("--restart", train.restart,
                        "begin a new run from the weights (only) of a checkpoint, a run directory's newest "
                        "checkpoint, or a model directory");
  std::string report_dir;
  auto* report_cmd = app.add_subcommand("report", "write RUN_DIR/report.html: charts of a run's metrics");
  report_cmd->add_option("run_dir", report_dir, "a `dew train` run directory")->required();
  dew::cli::DataOptions data;
  auto* data_cmd = app.add_subcommand("data", "the data chain of a config: its stages, statistics, batches");
  data_cmd->require_subcommand(1);
  std::vector<CLI::App*> data_cmds;
  for (const auto& [name, help] :
       {std::pair{"show", "print the chain's expanded stages"},
        {"stats", "run the chain and report records, tokens, padding and time per stage"},
        {"preview", "print a few batches, decoded, as JSONL"}}) {
    CLI::App* cmd = data_cmd->add_subcommand(name, help);
    cmd->add_option("config", data.config, "a TOML config with a [data] table (docs/data.md)")->required();
    cmd->add_option("--set", data.overrides, "override a config key: data.stage.2.seed=5 (repeatable)");
    CLI::Option* batches = nullptr;
    if (std::string(name) != "show")
      batches =
          cmd->add_option("--batches", data.batches,
                          "stop after this many batches, or records without batch (preview: 2; stats: all)");
    cmd->callback([&data, batches, name = std::string(name)] {
      data.what = name;
      if (name == "preview" && batches->count() == 0) data.batches = 2;
    });
    data_cmds.push_back(cmd);
  }
  dew::bench::DataBenchOptions bench_data;
  auto* bench_data_cmd = bench_cmd->add_subcommand(
      "data",
      "the data chain on the Brown corpus: per-stage rates, and its time against the tokenizer alone");
  bench_data_cmd->add_option("--tokenizer", bench_data.tokenizer, "a tokenizer (default: Llama 3's)");
  bench_data_cmd->add_option("--tokens", bench_data.T, "T, the packed window's tokens less one")
      ->default_val(1024);
  bench_data_cmd->add_option("--batch", bench_data.batch, "rows per batch")->default_val(8);
  bench_data_cmd->add_option("--reps", bench_data.reps, "best of this many runs")->default_val(5);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (*check_cmd) return dew::cli::run_check(check);
    if (*ops_cmd) return dew::cli::run_ops(markdown);
    if (*inspect_cmd) return dew::cli::run_inspect(inspect_path, inspect_jsonl);
    if (*score_cmd) return dew::cli::run_score(score);
    if (*tokenize_cmd) return dew::cli::run_tokenize(tokenize);
    if (*data_cmd) return dew::cli::run_data(data);
    if (*train_cmd) return dew::cli::run_train(train);
    if (*report_cmd) return dew::cli::run_report(report_dir);
    if (*generate_cmd) return dew::cli::run_generate(gen);
    if (*tokenizer_train_cmd) return dew::cli::run_tokenizer_train(tokenizer_train);
    if (*bench_ops_cmd) return dew::bench::run_ops_bench(bench_ops);
    if (*bench_autodiff_cmd) return dew::bench::run_autodiff_bench(bench_autodiff);
    if (*bench_cuda_cmd) return dew::bench::run_cuda_bench(bench_cuda);
    if (*bench_memory_cmd) return dew::bench::run_memory_bench(bench_memory);
    if (*bench_decode_cmd) return dew::bench::run_decode_bench(bench_decode);
    if (*bench_train_cmd) return dew::bench::run_train_bench(bench_train);
    if (*bench_tokenize_cmd) return dew::bench::run_tokenize_bench(bench_tokenize);
    if (*bench_data_cmd) return dew::bench::run_data_bench(bench_data);
  } catch (const dew::Error& e) {
    fmt::print(stderr, "dew: {}\n", e.what());
    return 1;
  }
  return 2;
}
