// Data-parallel `dew train` under mpirun (docs/parallel.md): 1, 2 and 4 ranks (oversubscribed on this
// machine) give the same bits — every logged loss and gradient norm, the weights and the optimizer
// state — with AdamW and Muon and for an image model, unsharded and with ZeRO-1, 2 and 3; a run
// resumes on another rank count exactly; sharding fits a state over a per-process memory limit; and
// row groups that do not divide among the ranks are refused. Skipped without MPI.
#include <dew/parallel.h>
#include <dew/safetensors.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include <signal.h>
#include <chrono>
#include <functional>
#include <vector>

#include "data_files.h"
#include "io/command.h"
#include "io/files.h"
#include "run_dew.h"
#include "train_config.h"

namespace {

namespace fs = std::filesystem;
using dew::testing::run_dew;

bool have_mpirun() {
  return dew::parallel::built_with_mpi() &&
         dew::run_command("command -v mpirun >/dev/null 2>&1").exit_code == 0;
}

// What runs `ranks` processes under mpirun, as root too (../shared/FACTS.md), with `env` (VAR=value ...).
std::string mpirun(int ranks, const std::string& env = "") {
  return "env " + env + (env.empty() ? "" : " ") +
         "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader mpirun "
         "--oversubscribe --bind-to none -n " +
         std::to_string(ranks);
}

// `dew ARGS` as `ranks` processes.
dew::CommandResult on_ranks(int ranks, const std::string& args, const std::string& env = "") {
  return run_dew(args, mpirun(ranks, env));
}

// Four row groups, a loss line per step, a constant learning rate: the runs the resume tests compare.
constexpr const char* kResumable =
    " --set parallel.row_groups=4 --set train.log_every=1 --set schedule.shape=constant "
    "--set schedule.warmup_steps=0 ";

// `dew train CONFIG --run-dir RUN ARGS` as `ranks` processes; a failure fails the calling test.
void train_on(int ranks, const std::string& config, const std::string& run, const std::string& args) {
  const auto r = on_ranks(ranks, "train " + config + " --run-dir " + run + " " + args);
  ASSERT_EQ(r.exit_code, 0) << r.out;
}

// Each metrics line's step, loss and grad_norm, and each evaluation's loss, as written (JSON keeps a
// double's every bit).
std::vector<std::string> losses(const std::string& run_dir) {
  std::vector<std::string> out;
  std::ifstream in(run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("loss")) out.push_back(nlohmann::json{j["step"], j["loss"], j["grad_norm"]}.dump());
    if (j.contains("eval_loss")) out.push_back(nlohmann::json{j["step"], "eval", j["eval_loss"]}.dump());
  }
  return out;
}

// kTinyLlama with other sizes: {"field = old", "field = new"} pairs.
std::string tiny_llama_with(const std::vector<std::pair<std::string, std::string>>& changes) {
  std::string model = dew::testing::kTinyLlama;
  for (const auto& [from, to] : changes) model.replace(model.find(from), from.size(), to);
  return model;
}

std::string file(const std::string& path) {
  return fs::exists(path) ? dew::read_text_file(path) : "(missing " + path + ")";
}

// Trains `config` on 1, 2 and 4 ranks and expects the same losses, weights and optimizer state.
void expect_same_bits_on_1_2_and_4_ranks(const std::string& config, const std::string& sets,
                                         const std::string& checkpoint) {
  std::vector<std::string> baseline;
  std::string weights, state;
  for (const int ranks : {1, 2, 4}) {
    const std::string run = config + ".ranks" + std::to_string(ranks);
    fs::remove_all(run);
    ASSERT_NO_FATAL_FAILURE(train_on(ranks, config, run, sets));
    const std::string dir = run + "/checkpoints/" + checkpoint;
    if (ranks == 1) {
      baseline = losses(run);
      weights = file(dir + "/model.safetensors");
      state = file(dir + "/optimizer.safetensors");
      EXPECT_FALSE(baseline.empty());
      continue;
    }
    EXPECT_EQ(losses(run), baseline) << ranks << " ranks";
    EXPECT_TRUE(file(dir + "/model.safetensors") == weights) << ranks << " ranks: the weights differ";
    EXPECT_TRUE(file(dir + "/optimizer.safetensors") == state) << ranks << " ranks: the optimizer differs";
  }
}

TEST(DataParallelCli, LanguageModelGivesTheSameBitsOnOneTwoAndFourRanks) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config("data_parallel_lm");
  const std::string common = "--set train.steps=4 --set train.log_every=1 --set parallel.row_groups=4 ";
  // Buckets of 1 KiB: each all-reduce starts as backward completes its parameters, in the order the
  // first step learned; the sums are the same.
  expect_same_bits_on_1_2_and_4_ranks(dir + "/run.toml",
                                      common + "--set optimizer.kind=adamw --set parallel.bucket_mib=0.001",
                                      "step-00000004");
  // Each rank's gradient traffic is in the metrics.
  std::ifstream metrics(dir + "/run.toml.ranks4/metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(metrics, line));
  EXPECT_GT(nlohmann::json::parse(line).value("communicated_bytes", int64_t(0)), 0) << line;
  expect_same_bits_on_1_2_and_4_ranks(
      dir + "/run.toml", common + "--set optimizer.kind=muon --set train.precision=f32", "step-00000004");
}

// A mixture of experts: experts a rank's rows never reach still take part in the sums (as zeros), and
// the routers' balancing biases move by the whole step's expert loads, the same on every rank.
TEST(DataParallelCli, ExpertsModelGivesTheSameBitsOnOneTwoAndFourRanks) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  std::string model = dew::testing::kTinyLlama;
  model.replace(model.find("\"llama\""), 7, "\"mixtral\"\nnum_local_experts = 4\nnum_experts_per_tok = 2");
  const std::string dir = dew::testing::train_config("data_parallel_moe", model);
  expect_same_bits_on_1_2_and_4_ranks(
      dir + "/run.toml",
      "--set train.steps=4 --set train.log_every=1 --set parallel.row_groups=4 --set train.precision=f32",
      "step-00000004");
}

TEST(DataParallelCli, ResumesOnAnotherRankCountExactly) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config("data_parallel_resume");
  const std::string config = dir + "/run.toml";
  const std::string sets = kResumable;
  ASSERT_NO_FATAL_FAILURE(train_on(1, config, dir + "/straight", sets + "--set train.steps=6"));
  // 2 ranks to step 2, then 1 rank to step 4, then 4 ranks to step 6, in one run directory.
  const std::string run = dir + "/moved";
  for (const auto& [ranks, steps] : std::vector<std::pair<int, int>>{{2, 2}, {1, 4}, {4, 6}}) {
    ASSERT_NO_FATAL_FAILURE(
        train_on(ranks, config, run, sets + "--set train.steps=" + std::to_string(steps)));
  }
  EXPECT_EQ(losses(run), losses(dir + "/straight"));
  EXPECT_TRUE(file(run + "/checkpoints/step-00000006/model.safetensors") ==
              file(dir + "/straight/checkpoints/step-00000006/model.safetensors"));
}

// ZeRO-1: each rank holds and updates the optimizer state of the parameters it owns, and sends them
// on; the training is the same bits as unsharded on one process, each rank writes its shard of the
// state, and the shards load on another rank count, sharded or not. ZeRO-2 likewise.
TEST(DataParallelCli, ShardedOptimizerStateGivesTheSameBitsAndMovesBetweenRankCounts) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config("data_parallel_zero1");
  const std::string config = dir + "/run.toml";
  const std::string sets = std::string(kResumable) + "--set optimizer.kind=muon --set train.precision=f32 ";
  ASSERT_NO_FATAL_FAILURE(train_on(1, config, dir + "/straight", sets + "--set train.steps=6"));
  const std::string run = dir + "/sharded";
  const auto two = on_ranks(2, "train " + config + " --run-dir " + run + sets +
                                   "--set train.steps=2 --set parallel.shard=optimizer");
  ASSERT_EQ(two.exit_code, 0) << two.out;
  const std::string first = run + "/checkpoints/step-00000002/";
  const std::string whole = dir + "/straight/checkpoints/step-00000006/optimizer.safetensors";
  for (const char* shard : {"optimizer-00000-of-00002.safetensors", "optimizer-00001-of-00002.safetensors"}) {
    ASSERT_TRUE(fs::exists(first + shard)) << shard;
    EXPECT_LT(fs::file_size(first + shard), fs::file_size(whole)) << shard << " holds a part of the state";
  }
  EXPECT_FALSE(fs::exists(first + "optimizer.safetensors"));
  std::ifstream metrics(run + "/metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(metrics, line));
  EXPECT_EQ(nlohmann::json::parse(line)["peak_bytes_per_rank"].size(), 2u) << line;
  // On to 1 rank (unsharded, every shard loaded), then 4 sharded ranks.
  for (const auto& [ranks, more] : std::vector<std::pair<int, std::string>>{
           {1, "--set train.steps=4"}, {4, "--set train.steps=6 --set parallel.shard=optimizer"}}) {
    ASSERT_NO_FATAL_FAILURE(train_on(ranks, config, run, sets + more));
  }
  EXPECT_EQ(losses(run), losses(dir + "/straight"));
  EXPECT_TRUE(file(run + "/checkpoints/step-00000006/model.safetensors") ==
              file(dir + "/straight/checkpoints/step-00000006/model.safetensors"));
  EXPECT_TRUE(fs::exists(run + "/checkpoints/step-00000006/optimizer-00003-of-00004.safetensors"));
  // ZeRO-2 (each gradient reduced to its owner alone, in 1 KiB buckets; the norm from the owners'
  // parts) on 2 and 4 ranks: the same bits again.
  for (const int ranks : {2, 4}) {
    const std::string zero2 = dir + "/zero2-" + std::to_string(ranks);
    const auto r = on_ranks(ranks, "train " + config + " --run-dir " + zero2 + sets +
                                       "--set train.steps=6 --set parallel.shard=gradients "
                                       "--set parallel.bucket_mib=0.001");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(losses(zero2), losses(dir + "/straight")) << ranks << " ranks";
    EXPECT_TRUE(file(zero2 + "/checkpoints/step-00000006/model.safetensors") ==
                file(dir + "/straight/checkpoints/step-00000006/model.safetensors"))
        << ranks << " ranks";
  }
}

// ZeRO-3: each rank keeps its own parameters' bytes alone and gathers each layer as the forward and
// backward reach it (bf16 mixed precision where the CPU has it: the owners' casts are what is
// gathered). Training, evaluations and samples are the same bits as one process; each rank writes its
// own weights (a Hugging Face sharded checkpoint), and the run moves 2 -> 4 -> 1 ranks exactly.
TEST(DataParallelCli, ShardedParametersGiveTheSameBitsAndMoveBetweenRankCounts) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config(
      "data_parallel_zero3", tiny_llama_with({{"num_hidden_layers = 1", "num_hidden_layers = 3"}}));
  const std::string config = dir + "/run.toml";
  std::ofstream(config, std::ios::app) << R"(
[eval]
every = 2
batches = 2
[eval.data]
source = { kind = "text", paths = ["corpus.txt"], unit = "line", epochs = 1 }
stage = [{ kind = "tokenize", tokenizer = "tok", append_eos = true }, { kind = "pack", T = 16 },
         { kind = "batch", size = 4 }]
[sample]
every = 2
tokens = 6
prompts = ["a small"]
)";
  const std::string sets =
      std::string(kResumable) + "--set train.checkpoint_every=2 --set parallel.bucket_mib=0.001 ";
  ASSERT_NO_FATAL_FAILURE(train_on(1, config, dir + "/straight", sets + "--set train.steps=6"));
  const std::string run = dir + "/sharded";
  for (const auto& [ranks, more] :
       std::vector<std::pair<int, std::string>>{{2, "--set train.steps=2 --set parallel.shard=full"},
                                                {4, "--set train.steps=4 --set parallel.shard=full"},
                                                {1, "--set train.steps=6"}}) {
    ASSERT_NO_FATAL_FAILURE(train_on(ranks, config, run, sets + more));
    if (ranks != 2) continue;
    const std::string first = run + "/checkpoints/step-00000002/";
    for (const char* part : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                             "model.safetensors.index.json"})
      EXPECT_TRUE(fs::exists(first + part)) << part;
    EXPECT_FALSE(fs::exists(first + "model.safetensors"));
  }
  EXPECT_EQ(losses(run), losses(dir + "/straight"));
  EXPECT_TRUE(file(run + "/checkpoints/step-00000006/model.safetensors") ==
              file(dir + "/straight/checkpoints/step-00000006/model.safetensors"));
  EXPECT_EQ(file(run + "/samples.jsonl"), file(dir + "/straight/samples.jsonl"));
}

// Sharding is memory: a model whose training state (f32 weights, gradients and AdamW's two moments,
// 64 MB; about 80 MB at its peak in one process) does not fit a 42 MB per-process limit on 2 ranks
// unsharded (80 MB each) or with ZeRO-2 (about 50 MB), and fits it with ZeRO-3 (about 36 MB),
// training the same bits as one unlimited process.
TEST(DataParallelCli, ShardedParametersFitAStateOverThePerProcessMemoryLimit) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config(
      "data_parallel_memory", tiny_llama_with({{"hidden_size = 32", "hidden_size = 128"},
                                               {"intermediate_size = 64", "intermediate_size = 512"},
                                               {"num_hidden_layers = 1", "num_hidden_layers = 16"}}));
  const std::string train = "train " + dir +
                            "/run.toml --set train.steps=3 --set train.log_every=1 "
                            "--set train.precision=f32 --set parallel.row_groups=2 --run-dir " +
                            dir;
  const auto alone = run_dew(train + "/alone");
  ASSERT_EQ(alone.exit_code, 0) << alone.out;
  const std::string limited = "DEW_MEMORY_LIMIT=42000000";
  for (const char* shard : {"none", "gradients"}) {
    const auto r = on_ranks(2, train + "/" + shard + " --set parallel.shard=" + shard, limited);
    EXPECT_NE(r.exit_code, 0) << shard;
    EXPECT_NE(r.out.find("[train] out of memory at step"), std::string::npos) << shard << ": " << r.out;
  }
  const auto full = on_ranks(2, train + "/full --set parallel.shard=full", limited);
  ASSERT_EQ(full.exit_code, 0) << full.out;
  EXPECT_EQ(losses(dir + "/full"), losses(dir + "/alone"));
}

// ZeRO-3 builds, loads and keeps only each rank's own weights: a model whose weights alone (95 MB in
// f32) pass an 80 MB per-process limit — one process cannot even build it — trains on 4 ranks under
// that limit (SGD without momentum: no state beside the weights and gradients, about 65 MB a rank)
// and resumes under it, to the same bits as one unlimited process.
TEST(DataParallelCli, ShardedParametersTrainAModelWhoseWeightsPassThePerProcessLimit) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config(
      "data_parallel_weights", tiny_llama_with({{"hidden_size = 32", "hidden_size = 256"},
                                                {"intermediate_size = 64", "intermediate_size = 1024"},
                                                {"num_hidden_layers = 1", "num_hidden_layers = 24"}}));
  const std::string config = dir + "/run.toml";
  const std::string sets = std::string(kResumable) +
                           "--set train.precision=f32 --set optimizer.kind=sgd --set optimizer.momentum=0 "
                           "--set train.checkpoint_every=1 ";
  ASSERT_NO_FATAL_FAILURE(train_on(1, config, dir + "/alone", sets + "--set train.steps=3"));
  const std::string limited = "DEW_MEMORY_LIMIT=80000000";
  const auto whole = on_ranks(1, "train " + config + " --run-dir " + dir + "/whole " + sets, limited);
  EXPECT_NE(whole.exit_code, 0);
  EXPECT_NE(whole.out.find("out of memory"), std::string::npos) << whole.out;
  for (const int steps : {2, 3}) {  // then resumed
    const auto r = on_ranks(4,
                            "train " + config + " --run-dir " + dir + "/full " + sets +
                                "--set parallel.shard=full --set train.steps=" + std::to_string(steps),
                            limited);
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  EXPECT_EQ(losses(dir + "/full"), losses(dir + "/alone"));
}

TEST(DataParallelCli, ImageModelGivesTheSameBitsOnOneTwoAndFourRanks) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  dew::testing::DataDir dir("data_parallel_dit");
  dir.write_idx_images("images.idx", "labels.idx", 32, 8, 3,
                       [](int n, int p) { return (p * 7 + n * 13) % 251; });
  dir.write("dit.toml", std::string("[model]\n") + dew::testing::kTinyDit + R"(class_dropout_prob = 0.25
[diffusion]
objective = "flow"
[train]
steps = 3
log_every = 1
precision = "f32"
[parallel]
row_groups = 4
)" + dew::testing::kTinyImagesData);
  expect_same_bits_on_1_2_and_4_ranks(dir.path("dit.toml"), "", "step-00000003");
  // ZeRO-3: the blocks gathered as the forward enters them; the same bits again.
  const std::string full = dir.path("dit.toml") + ".full";
  fs::remove_all(full);
  const auto r =
      on_ranks(2, "train " + dir.path("dit.toml") + " --run-dir " + full + " --set parallel.shard=full");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(losses(full), losses(dir.path("dit.toml") + ".ranks1"));
}

// Tensor parallelism on a 2-D grid (NOTE [2-D grid], trainer.cc): each model split over 2 ranks, as
// one group (2 ranks) or two data-parallel replicas of one (4 ranks), trains the same bits either way,
// evaluates and samples; its checkpoints hold whole tensors, as one process writes them, and move
// between layouts. What it does not combine with is refused by name.
TEST(DataParallelCli, TensorParallelTrainsOnATwoDimensionalGridWithWholeCheckpoints) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config("tensor_parallel");
  const std::string config = dir + "/run.toml";
  const std::string sets = std::string(kResumable) + "--set train.steps=4 --set parallel.tensor=2 ";
  ASSERT_NO_FATAL_FAILURE(train_on(2, config, dir + "/one_group", sets));
  ASSERT_NO_FATAL_FAILURE(train_on(4, config, dir + "/two_groups", sets));
  EXPECT_EQ(losses(dir + "/two_groups"), losses(dir + "/one_group"));
  const std::string last = "/checkpoints/step-00000004/";
  EXPECT_TRUE(file(dir + "/two_groups" + last + "model.safetensors") ==
              file(dir + "/one_group" + last + "model.safetensors"));
  // Whole tensors: the names and shapes one process writes.
  ASSERT_NO_FATAL_FAILURE(
      train_on(1, config, dir + "/alone", std::string(kResumable) + "--set train.steps=4"));
  for (const char* part : {"model.safetensors", "optimizer.safetensors"}) {
    const auto split = dew::SafetensorsCheckpoint::open(dir + "/one_group" + last + part);
    const auto whole = dew::SafetensorsCheckpoint::open(dir + "/alone" + last + part);
    ASSERT_EQ(split.names(), whole.names()) << part;
    for (const std::string& name : whole.names())
      EXPECT_EQ(split.find(name)->shape, whole.find(name)->shape) << part << " " << name;
  }
  // On to one process, and back to a split model.
  ASSERT_NO_FATAL_FAILURE(
      train_on(1, config, dir + "/one_group", std::string(kResumable) + "--set train.steps=5"));
  ASSERT_NO_FATAL_FAILURE(train_on(2, config, dir + "/one_group", sets + "--set train.steps=6"));
  EXPECT_EQ(losses(dir + "/one_group").size(), 6u);
  const auto muon =
      on_ranks(2, "train " + config + " --run-dir " + dir + "/muon " + sets + "--set optimizer.kind=muon");
  EXPECT_NE(muon.exit_code, 0);
  EXPECT_NE(muon.out.find("Muon orthogonalizes whole matrices"), std::string::npos) << muon.out;
  const auto three = on_ranks(
      4, "train " + config + " --run-dir " + dir + "/three " + kResumable + "--set parallel.tensor=3");
  EXPECT_NE(three.out.find("4 ranks do not form groups of [parallel] tensor = 3"), std::string::npos)
      << three.out;
}

TEST(DataParallelCli, LaunchRunsTheCommandAsRanksThroughMpirun) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config("data_parallel_launch");
  const std::string sets = " --set train.steps=2 --set train.log_every=1 --set parallel.row_groups=2";
  const auto launched =
      run_dew("launch -n 2 -- train " + dir + "/run.toml --run-dir " + dir + "/launched" + sets);
  ASSERT_EQ(launched.exit_code, 0) << launched.out;
  EXPECT_NE(launched.out.find("x 2 ranks, 2 row groups (1 per rank)"), std::string::npos) << launched.out;
  const auto alone = run_dew("train " + dir + "/run.toml --run-dir " + dir + "/alone" + sets);
  ASSERT_EQ(alone.exit_code, 0) << alone.out;
  EXPECT_EQ(losses(dir + "/launched"), losses(dir + "/alone"));
  // More ranks than cores: oversubscribed.
  const std::string more = std::to_string(std::thread::hardware_concurrency() + 1);
  const auto dry = run_dew("launch -n " + more + " --dry-run -- train run.toml");
  EXPECT_EQ(dry.exit_code, 0) << dry.out;
  EXPECT_NE(dry.out.find("mpirun -n " + more + " "), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("--oversubscribe"), std::string::npos) << dry.out;
  const auto hosts = run_dew("launch -n 2 --hostfile /nonexistent/hosts -- train run.toml");
  EXPECT_EQ(hosts.exit_code, 1);
  EXPECT_NE(hosts.out.find("--hostfile /nonexistent/hosts does not exist"), std::string::npos) << hosts.out;
}

// A rank that stops (SIGSTOP: alive, silent, never reaching the next collective): the other gives up
// after [parallel] timeout_s, names it, and the job ends; the last committed checkpoint resumes.
TEST(DataParallelCli, AStoppedRankEndsTheRunWithinTheTimeoutNamingIt) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config("data_parallel_fault");
  const std::string run = dir + "/run";
  const std::string command =
      mpirun(2) + " " DEW_BINARY " train " + dir + "/run.toml --run-dir " + run +
      " --set train.steps=100000 --set train.checkpoint_every=3 --set parallel.timeout_s=4";
  ASSERT_EQ(dew::run_command("(" + command + " > " + dir + "/log 2>&1; echo $? > " + dir +
                             "/rc) > /dev/null 2>&1 &")
                .exit_code,
            0);
  // Once rank 1 has reported a few steps, stop it.
  const auto waited_for = [](const std::function<bool()>& done, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  };
  int64_t pid = 0;
  ASSERT_TRUE(waited_for(
      [&] {
        const std::string heartbeat = run + "/ranks/rank-1.json";
        if (!fs::exists(heartbeat)) return false;  // past step 4: step 3's checkpoint is committed
        const nlohmann::json j = nlohmann::json::parse(dew::read_text_file(heartbeat), nullptr, false);
        pid = j.is_object() ? j.value("pid", int64_t(0)) : 0;
        return pid > 0 && j.value("step", 0) >= 4;
      },
      120))
      << file(dir + "/log");
  ASSERT_EQ(::kill(pid_t(pid), SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  const bool ended = waited_for([&] { return fs::exists(dir + "/rc"); }, 60);
  ::kill(pid_t(pid), SIGKILL);  // whatever happened
  ASSERT_TRUE(ended) << "the run did not end within 60 s of a rank stopping";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count(), 30);
  EXPECT_NE(dew::read_text_file(dir + "/rc"), "0\n");
  const std::string log = file(dir + "/log");
  EXPECT_NE(log.find("rank 0 waited"), std::string::npos) << log;
  EXPECT_NE(log.find("rank 1 (process " + std::to_string(pid)), std::string::npos) << log;
  EXPECT_NE(log.find("it stopped or died"), std::string::npos) << log;
  EXPECT_NE(log.find("is intact; run it again to resume"), std::string::npos) << log;
  // The committed checkpoints are whole: one process resumes from the newest and trains a step more.
  int64_t newest = 0;
  for (const auto& entry : fs::directory_iterator(run + "/checkpoints"))
    if (fs::exists(entry.path() / "COMMITTED"))
      newest = std::max(newest, int64_t(std::stoll(entry.path().filename().string().substr(5))));
  ASSERT_GE(newest, 3);
  const auto resumed = run_dew("train " + dir + "/run.toml --run-dir " + run +
                               " --set train.steps=" + std::to_string(newest + 1));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("resumed from " + run + "/checkpoints/step-"), std::string::npos) << resumed.out;
}

TEST(DataParallelCli, RefusesRowGroupsThatDoNotDivideAmongTheRanks) {
  if (!have_mpirun()) GTEST_SKIP() << "no MPI in this build, or no mpirun";
  const std::string dir = dew::testing::train_config("data_parallel_refusals");
  const auto r =
      on_ranks(2, "train " + dir + "/run.toml --run-dir " + dir + "/run --set parallel.row_groups=3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("parallel.row_groups 3 on 2 ranks"), std::string::npos) << r.out;
  const auto six =
      on_ranks(2, "train " + dir + "/run.toml --run-dir " + dir + "/run --set parallel.row_groups=6");
  EXPECT_NE(six.exit_code, 0);
  EXPECT_NE(six.out.find("expected a power of two per rank"), std::string::npos) << six.out;
}

}  // namespace
