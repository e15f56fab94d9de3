// The Trainer: a run stopped and resumed repeats the uninterrupted one bit for bit (losses, weights),
// at 1 and 2 threads; metrics are logged; non-finite steps are skipped, then stop the run.
#include <dew/runtime.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include <unistd.h>

#include "data_files.h"
#include "error_of.h"
#include "run_trainer.h"

namespace dew::train {
namespace {

class TrainerRuns : public ::testing::Test {
 protected:
  TrainerRuns() : dir_("trainer") {
    std::string text;
    for (int i = 0; i < 200; ++i) text += "a small river " + std::to_string(i % 13) + " runs by the stone\n";
    dir_.write("corpus.txt", text);
    dir_.write_tokenizer("tok", text, "<|eot|>");
    config_.model_json =
        R"({"model_type": "llama", "vocab_size": 400, "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64})";
    config_.steps = 8;
    config_.accumulation = 2;
    config_.log_every = 2;
    config_.schedule = {.shape = LrSchedule::Shape::cosine, .peak_lr = 3e-3, .warmup_steps = 2};
    config_.tokenizer = dir_.path("tok");
    config_.eval_every = 4;
    config_.eval_batches = 2;
    config_.sample_every = 4;
    config_.sample_tokens = 4;
    config_.sample_prompts = {"a small"};
  }
  data::Chain chain() {
    data::Chain c = data::Chain::text_files({dir_.path("corpus.txt")}, data::TextUnit::line, {.epochs = 0});
    c.shuffle(3).tokenize(dir_.path("tok"), {.append_eos = true}).pack(16).batch(2);
    return c;
  }
  // Runs in `run_dir` and returns the losses of the steps it took, by step.
  std::map<int64_t, double> train(const std::string& run_dir, int64_t stop_at = 0) {
    const testing::RunLosses run = testing::run_trainer(
        config_, chain(), dir_.path(run_dir), [this] { return chain(); }, stop_at);
    EXPECT_EQ(run.outcome.stopped, stop_at > 0);
    return run.losses;
  }
  // The losses of the same run at 1 thread and at 2, in run directories PREFIX_1_threads and _2_threads.
  std::pair<std::map<int64_t, double>, std::map<int64_t, double>> at_one_and_two_threads(
      const std::string& prefix) {
    const int threads = num_threads();
    set_num_threads(1);
    auto one = train(prefix + "_1_threads");
    set_num_threads(2);
    auto two = train(prefix + "_2_threads");
    set_num_threads(threads);
    return {std::move(one), std::move(two)};
  }
  std::map<std::string, std::vector<double>> final_weights(const std::string& run_dir) {
    std::map<std::string, std::vector<double>> out;
    const LoadedCheckpoint loaded = load_checkpoint(find_checkpoints(dir_.path(run_dir)).latest);
    for (const auto& [name, t] : loaded.model.parameters()) out[name] = t.to_f64_vector();
    return out;
  }
  testing::DataDir dir_;
  TrainerConfig config_;
};

TEST_F(TrainerRuns, StoppedAndResumedIsTheSameRunBitForBit) {
  const auto straight = train("straight");
  ASSERT_EQ(straight.size(), 8u);
  EXPECT_LT(straight.at(8), straight.at(1)) << "the loss falls";

  const auto first = train("interrupted", 4);
  EXPECT_EQ(first.size(), 4u);
  EXPECT_EQ(find_checkpoints(dir_.path("interrupted")).step, 4);
  const auto second = train("interrupted");
  ASSERT_EQ(second.size(), 4u) << "resumed at step 4";
  for (int64_t s = 1; s <= 8; ++s) EXPECT_EQ((s <= 4 ? first : second).at(s), straight.at(s)) << "step " << s;
  EXPECT_EQ(final_weights("interrupted"), final_weights("straight"));

  // The metrics: a line per log step, the same losses; the held-out evaluations are the same too.
  const auto eval_lines = [&](const std::string& run) {
    std::vector<std::string> out;
    std::ifstream in(dir_.path(run + "/metrics.jsonl"));
    for (std::string line; std::getline(in, line);)
      if (line.find("eval_loss") != std::string::npos) {
        nlohmann::json j = nlohmann::json::parse(line);
        j.erase("time");  // the wall clock differs; everything else is the same
        out.push_back(j.dump());
      }
    return out;
  };
  EXPECT_EQ(eval_lines("interrupted"), eval_lines("straight"));
  EXPECT_EQ(eval_lines("straight").size(), 2u);
  const nlohmann::json first_eval = nlohmann::json::parse(eval_lines("straight")[0]);
  EXPECT_GT(first_eval["unigram_entropy"].get<double>(), 0);  // the held-out targets are not all one token
  EXPECT_GT(first_eval["eval_targets"].get<int64_t>(), 0);
  EXPECT_EQ(first_eval["eval_perplexity"].get<double>(), std::exp(first_eval["eval_loss"].get<double>()));
  const double accuracy = first_eval["eval_accuracy"].get<double>();
  EXPECT_TRUE(accuracy >= 0 && accuracy <= 1) << accuracy;
  std::ifstream samples(dir_.path("straight/samples.jsonl"));
  int sample_lines = 0;
  for (std::string line; std::getline(samples, line);) ++sample_lines;
  EXPECT_EQ(sample_lines, 2);
  std::ifstream metrics(dir_.path("interrupted/metrics.jsonl"));
  std::vector<int64_t> steps;
  for (std::string line; std::getline(metrics, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("eval_loss")) continue;
    steps.push_back(j["step"]);
    EXPECT_EQ(j["loss"].get<double>(), straight.at(j["step"].get<int64_t>()));
    for (const char* key :
         {"tokens", "lr", "grad_norm", "tokens_per_s", "step_s", "data_wait_s", "peak_bytes", "accuracy"})
      EXPECT_TRUE(j.contains(key)) << key;
    // A wall-clock timestamp, within the last hour.
    const double now = double(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
    EXPECT_GT(j["time"].get<double>(), now - 3600);
    EXPECT_LE(j["time"].get<double>(), now + 1);
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{2, 4, 6, 8}));
}

// A finished run is left as it is, and says so; a resume with a longer run says what changed; a run
// shorter than its warm-up clips the warm-up, with a note.
TEST_F(TrainerRuns, FinishedRunsAreLeftAloneAndChangedResumesAreNamed) {
  config_.eval_every = config_.sample_every = 0;
  config_.steps = 4;
  config_.schedule.warmup_steps = 6;
  std::vector<std::string> said;
  const auto run = [&] {
    said.clear();
    Trainer trainer(config_, chain(), dir_.path("finished"));
    trainer.on_log = [&](const std::string& line) { said.push_back(line); };
    return trainer.run();
  };
  const auto has = [&](const std::string& text) {
    return std::any_of(said.begin(), said.end(),
                       [&](const std::string& l) { return l.find(text) != l.npos; });
  };
  const Trainer::Outcome trained = run();
  EXPECT_FALSE(trained.finished_already);
  EXPECT_TRUE(has("the warm-up of 6 steps is longer than the run's 4; it is clipped to 4")) << said.front();
  const auto metrics_text = [&] {
    std::ifstream in(dir_.path("finished/metrics.jsonl"));
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string metrics = metrics_text();
  const Trainer::Outcome again = run();
  EXPECT_TRUE(again.finished_already);
  EXPECT_EQ(again.step, 4);
  EXPECT_EQ(again.checkpoint, dir_.path("finished/checkpoints/step-00000004"));
  EXPECT_EQ(metrics_text(), metrics);
  EXPECT_FALSE(has("step 5"));

  config_.steps = 6;
  config_.schedule.total_steps = 0;  // the run's length, as trainer_config_from_toml leaves it
  const Trainer::Outcome longer = run();
  EXPECT_EQ(longer.step, 6);
  EXPECT_TRUE(has(
      "the config changed since: schedule.total_steps 4 -> 6, schedule.warmup_steps 4 -> 6, steps 4 -> 6"))
      << fmt::format("{}", fmt::join(said, "\n"));
}

// MFU is never over 100%: a peak that reads below a step's own FLOP rate (measured in a busy moment)
// is measured again, and never taken below what the step did.
TEST_F(TrainerRuns, MfuStaysAtOrBelowOneWhenThePeakReadLow) {
  config_.eval_every = config_.sample_every = 0;
  config_.steps = 4;
  config_.peak_flops = 1;  // one FLOP/s: below any step
  std::vector<std::string> said;
  Trainer trainer(config_, chain(), dir_.path("low_peak"));
  trainer.on_log = [&](const std::string& line) { said.push_back(line); };
  trainer.run();
  EXPECT_TRUE(std::any_of(said.begin(), said.end(), [](const std::string& l) {
    return l.find("the peak MFU is measured against read 0.0 GFLOP/s") != l.npos;
  }));
  std::ifstream metrics(dir_.path("low_peak/metrics.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(metrics, line); ++lines) {
    const double mfu = nlohmann::json::parse(line)["mfu"].get<double>();
    EXPECT_GT(mfu, 0);
    EXPECT_LE(mfu, 1);
  }
  EXPECT_EQ(lines, 2);
}

TEST_F(TrainerRuns, OneThreadAndTwoThreadsTrainTheSame) {
  const auto [one, two] = at_one_and_two_threads("threads");
  EXPECT_EQ(one, two);
}

// bf16 mixed precision: bf16 copies of the weights do the work, the f32 master weights learn; the run
// is its own (other losses than f32's) and as deterministic (1 thread = 2 threads).
TEST_F(TrainerRuns, MixedPrecisionTrainsTheF32MasterWeightsDeterministically) {
  config_.eval_every = config_.sample_every = 0;
  const auto f32 = train("full_precision");
  config_.compute = DType::bf16;
  const auto [one, two] = at_one_and_two_threads("mixed");
  EXPECT_EQ(one, two);
  ASSERT_EQ(two.size(), 8u);
  EXPECT_LT(two.at(8), two.at(1)) << "the loss falls";
  EXPECT_NE(two.at(1), f32.at(1)) << "the forward ran in bf16";
  const LoadedCheckpoint mixed = load_checkpoint(find_checkpoints(dir_.path("mixed_2_threads")).latest);
  for (const auto& [name, t] : mixed.model.parameters()) EXPECT_EQ(t.dtype(), DType::f32) << name;
  for (const auto& [name, t] : mixed.optimizer_state) EXPECT_EQ(t.dtype(), DType::f32) << name;
}

// train.device = cuda:0: where a GPU exists the run trains there (finite losses, a checkpoint the host
// reads back); without one the run is refused naming the device.
TEST_F(TrainerRuns, ARunOnAGpuTrainsThereOrIsRefusedNamingTheDevice) {
  config_.device = Device::cuda(0);
  if (cuda_device_count() == 0) {
    const std::string e = testing::error_of([&] { train("on_gpu"); });
    EXPECT_NE(e.find("cuda:0"), std::string::npos) << e;
    return;
  }
  const std::map<int64_t, double> losses = train("on_gpu");
  EXPECT_EQ(int64_t(losses.size()), config_.steps);
  for (const auto& [step, loss] : losses) EXPECT_TRUE(std::isfinite(loss)) << "step " << step;
  EXPECT_FALSE(final_weights("on_gpu").empty());
}

TEST_F(TrainerRuns, NonFiniteStepsAreSkippedThenStopTheRun) {
  config_.schedule.peak_lr = 1e30;
  config_.grad_clip = 0;
  config_.max_skips = 2;
  const std::string e = testing::error_of([&] { train("exploding"); });
  EXPECT_NE(e.find("2 consecutive steps had a non-finite loss or gradient norm"), std::string::npos) << e;
}

TEST_F(TrainerRuns, RunJsonRecordsConfigChainRoutesLibrariesAndMachine) {
  config_.steps = 2;
  config_.eval_every = config_.sample_every = 0;
  train("recorded");
  std::ifstream in(dir_.path("recorded/run.json"));
  const nlohmann::json run = nlohmann::json::parse(in);
  EXPECT_EQ(run["config"]["steps"], 2);
  EXPECT_EQ(run["config"]["accumulation"], 2);
  EXPECT_EQ(run["config"]["model"]["hidden_size"], 32);
  EXPECT_EQ(run["config"]["schedule"]["shape"], "cosine");
  EXPECT_NE(run["data"].dump().find("corpus.txt"), std::string::npos) << run["data"];
  std::set<std::string> ops;
  for (const auto& r : run["routes"]) ops.insert(r["op"].get<std::string>());
  for (const char* op : {"matmul", "attention", "rms_norm", "cross_entropy"})
    EXPECT_TRUE(ops.count(op)) << op;
  EXPECT_FALSE(run["libraries"]["onednn"].get<std::string>().empty());
  EXPECT_FALSE(run["build"]["commit"].get<std::string>().empty());
  EXPECT_EQ(run["machine"]["threads"], num_threads());
  EXPECT_GT(run["machine"]["memory_bytes"].get<double>(), 0);
  // The checkpoint carries the same record.
  std::ifstream in_checkpoint(find_checkpoints(dir_.path("recorded")).latest + "/run.json");
  EXPECT_EQ(nlohmann::json::parse(in_checkpoint)["routes"], run["routes"]);
}

TEST_F(TrainerRuns, InitFromStartsANewRunFromWeightsOnly) {
  config_.steps = 3;
  config_.eval_every = config_.sample_every = 0;
  train("pretrained");
  config_.accumulation = 1;
  config_.steps = 1;
  config_.schedule.warmup_steps = 0;
  config_.init_from = dir_.path("pretrained");  // a run directory: its newest checkpoint
  const auto losses = train("restarted");
  // Its first loss is the pretrained model's on the chain's first batch: its weights, a fresh data position.
  LoadedCheckpoint pretrained = load_checkpoint(find_checkpoints(dir_.path("pretrained")).latest);
  data::Chain fresh = chain();
  const double expected = lm_loss(pretrained.model.language(), *fresh.next_batch()).loss.to_f64_vector()[0];
  EXPECT_EQ(losses.at(1), expected);
  const LoadedCheckpoint restarted = load_checkpoint(find_checkpoints(dir_.path("restarted")).latest);
  EXPECT_EQ(restarted.step, 1);
  EXPECT_EQ(restarted.optimizer_steps, 1) << "a fresh optimizer";

  // Its run directory resumes only the same restart; another start there is refused.
  config_.init_from.clear();
  const std::string e = testing::error_of([&] { train("restarted"); });
  EXPECT_NE(e.find("already holds a run"), std::string::npos) << e;
  EXPECT_NE(e.find("begun from " + dir_.path("pretrained")), std::string::npos) << e;
  config_.init_from = dir_.path("missing");
  EXPECT_NE(testing::error_of([&] { train("elsewhere"); }).find("missing"), std::string::npos);
}

TEST_F(TrainerRuns, OutOfMemoryEndsTheRunAndLeavesTheLastCheckpointIntact) {
  config_.steps = 6;
  config_.checkpoint_every = 2;
  config_.eval_every = config_.sample_every = 0;
  Trainer trainer(config_, chain(), dir_.path("oom"));
  trainer.on_step = [](const Trainer::Progress& p) {  // after step 3, nothing more fits
    if (p.step == 3) set_memory_limit(cpu_memory_stats().bytes_in_use + 1);
  };
  const std::string e = testing::error_of([&] { trainer.run(); });
  set_memory_limit(0);
  EXPECT_NE(e.find("out of memory at step 4 of 6"), std::string::npos) << e;
  EXPECT_NE(e.find("the last checkpoint " + dir_.path("oom") + "/checkpoints/step-00000002 is intact"),
            std::string::npos)
      << e;
  const CheckpointScan scan = find_checkpoints(dir_.path("oom"));
  EXPECT_EQ(scan.step, 2);
  EXPECT_TRUE(scan.ignored.empty());
  EXPECT_EQ(train("oom").size(), 4u) << "it resumes from step 2";
}

// A run directory has one trainer: a second, started while the first trains, is refused at once,
// naming the first's process; once the first is done, the directory is free again.
TEST_F(TrainerRuns, ASecondTrainerOnARunDirectoryIsRefusedNamingTheFirst) {
  config_.eval_every = config_.sample_every = 0;
  config_.steps = 2;
  Trainer first(config_, chain(), dir_.path("shared"));
  std::string refusal;
  first.on_step = [&](const Trainer::Progress& p) {
    if (p.step != 1) return;
    Trainer second(config_, chain(), dir_.path("shared"));
    refusal = testing::error_of([&] { second.run(); });
  };
  first.run();
  EXPECT_NE(refusal.find(dir_.path("shared") + " is in use by process " + std::to_string(::getpid())),
            std::string::npos)
      << refusal;
  EXPECT_EQ(find_checkpoints(dir_.path("shared")).step, 2) << "the first run went on untouched";
  config_.steps = 3;
  EXPECT_EQ(train("shared").size(), 1u) << "free once the first trainer is done";
}

// What killed writes leave: a checkpoint renamed into place whose commit marker was never written (a
// kill between the two) and `.partial-*` directories. The next start removes both, saying so, and
// redoes the unmarked checkpoint's steps, where it used to refuse that step's checkpoint forever.
TEST_F(TrainerRuns, UnfinishedCheckpointWritesAreRemovedAndTheirStepsRedone) {
  config_.eval_every = config_.sample_every = 0;
  config_.checkpoint_every = 4;
  const auto straight = train("whole");
  train("killed", 4);
  const std::string checkpoints = dir_.path("killed/checkpoints");
  std::filesystem::remove(checkpoints + "/step-00000004/COMMITTED");
  std::filesystem::create_directories(checkpoints + "/.partial-step-00000006-99999");
  std::ofstream(checkpoints + "/.partial-step-00000006-99999/model.safetensors") << std::string(1000, 'x');

  Trainer trainer(config_, chain(), dir_.path("killed"));
  std::vector<std::string> said;
  std::map<int64_t, double> losses;
  trainer.on_log = [&](const std::string& line) { said.push_back(line); };
  trainer.on_step = [&](const Trainer::Progress& p) { losses[p.step] = p.loss; };
  trainer.run();
  EXPECT_EQ(losses, straight) << "all eight steps again, the same";
  const auto removed = [&](const std::string& what) {
    return std::count_if(said.begin(), said.end(), [&](const std::string& line) {
      return line.rfind("removed " + checkpoints + "/" + what, 0) == 0;
    });
  };
  EXPECT_EQ(removed("step-00000004 ("), 1) << fmt::format("{}", fmt::join(said, "\n"));
  EXPECT_EQ(removed(".partial-step-00000006-99999 (0.0 MB): a write that did not finish"), 1);
  EXPECT_FALSE(std::filesystem::exists(checkpoints + "/.partial-step-00000006-99999"));
  EXPECT_TRUE(std::filesystem::exists(checkpoints + "/step-00000004/COMMITTED"));
  EXPECT_EQ(find_checkpoints(dir_.path("killed")).step, 8);
}

// Token ids past the model's vocabulary are refused naming the batch and the vocabulary (it was the
// embedding op's "index[3] is 60000" from inside the forward).
TEST_F(TrainerRuns, TokenIdsOutsideTheVocabularyAreRefusedNamingTheBatch) {
  config_.eval_every = config_.sample_every = 0;
  const std::string wide = "\"vocab_size\": 400";
  config_.model_json.replace(config_.model_json.find(wide), wide.size(), "\"vocab_size\": 40");
  Trainer trainer(config_, chain(), dir_.path("small_vocabulary"));
  const std::string e = testing::error_of([&] { trainer.run(); });
  EXPECT_NE(e.find("[train] batch 0 of the data chain holds token id "), std::string::npos) << e;
  EXPECT_NE(e.find("outside the model's vocabulary of 40 ([model] vocab_size)"), std::string::npos) << e;
}

// A language model keeps the weights' average too: in each checkpoint, resumed exactly, and its samples
// drawn from it.
TEST_F(TrainerRuns, ALanguageModelKeepsItsWeightAverage) {
  config_.ema_decay = 0.9;
  config_.eval_every = 0;
  const auto straight = train("ema_straight");
  train("ema_interrupted", 4);
  const auto resumed = train("ema_interrupted");
  EXPECT_EQ(resumed.at(8), straight.at(8));
  const auto average = [&](const std::string& run) {
    const LoadedCheckpoint c = load_checkpoint(find_checkpoints(dir_.path(run)).latest);
    EXPECT_FALSE(c.ema_path.empty()) << run;
    Ema ema(c.model.parameters(), 0.9, true);
    ema.load(c.ema_path);
    EXPECT_EQ(ema.updates(), 8);
    std::map<std::string, std::vector<double>> out;
    for (const auto& [name, t] : ema.averages()) out[name] = t.to_f64_vector();
    return out;
  };
  EXPECT_EQ(average("ema_interrupted"), average("ema_straight"));
  EXPECT_NE(average("ema_straight"), final_weights("ema_straight"));  // an average, not the weights
}

}  // namespace
}  // namespace dew::train
