// Checkpoint directories: round trip, commit marker, partial writes ignored and reported, retention.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/tokenizer.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data_files.h"
#include "error_of.h"

namespace dew::train {
namespace {

namespace fs = std::filesystem;

CausalLM tiny_model(uint64_t seed) {
  return CausalLM::init(parse_model_config(R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 16,
      "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
      "max_position_embeddings": 16})",
                                           "test"),
                        DType::f32, seed);
}

struct TrainingRun {
  TrainedModel model = tiny_model(1);
  std::vector<Param> params;
  std::unique_ptr<Optimizer> optimizer;
  TrainingRun() {
    for (auto& [name, p] : model.parameters()) p.requires_grad_();
    params = default_groups(model.parameters(), 0.1);
    optimizer = make_adamw(params);
  }
  void step() {  // a gradient from a fixed loss, then an update
    optimizer->zero_grad();
    Tensor loss;
    for (auto& [name, p] : model.parameters()) {
      const Tensor term = sum(mul(p, p));
      loss = loss.defined() ? add(loss, term) : term;
    }
    backward(loss);
    optimizer->step(1e-2);
  }
};

TEST(Checkpoints, RoundTripAndTheNextStepIsTheSame) {
  testing::DataDir dir("checkpoint_round_trip");
  dir.write_tokenizer("tok", "some text for a tokenizer", "<|eot|>");
  TrainingRun run;
  run.step();
  run.step();
  const std::string path = save_checkpoint(
      dir.path("run"), 2, {&run.model, run.optimizer.get(), R"({"tokens": 64})", dir.path("tok"), "{}"});
  EXPECT_EQ(path, dir.path("run") + "/checkpoints/step-00000002");
  EXPECT_TRUE(fs::exists(path + "/COMMITTED"));
  EXPECT_TRUE(fs::exists(path + "/tokenizer.json"));
  const CheckpointScan scan = find_checkpoints(dir.path("run"));
  EXPECT_EQ(scan.latest, path);
  EXPECT_EQ(scan.step, 2);

  LoadedCheckpoint loaded = load_checkpoint(path);
  EXPECT_EQ(loaded.step, 2);
  EXPECT_EQ(loaded.optimizer_steps, 2);
  EXPECT_EQ(loaded.trainer_state, R"({"tokens": 64})");
  // Resumed: the same parameters, and the same next step, bit for bit.
  TrainingRun resumed;
  for (auto& [name, p] : resumed.model.parameters()) {
    const Tensor& saved = loaded.model.parameters().at(name);
    std::copy(saved.data<float>(), saved.data<float>() + saved.numel(), p.data<float>());
  }
  resumed.optimizer->load_state(loaded.optimizer_state, loaded.optimizer_steps);
  run.step();
  resumed.step();
  for (const auto& [name, p] : run.model.parameters())
    EXPECT_EQ(p.to_f64_vector(), resumed.model.parameters().at(name).to_f64_vector()) << name;
  // The checkpoint is a model directory: it loads with its tokenizer.
  EXPECT_EQ(Tokenizer::load(path).vocab_size(), Tokenizer::load(dir.path("tok")).vocab_size());
  EXPECT_NE(testing::error_of([&] {
              save_checkpoint(dir.path("run"), 2, {&run.model, run.optimizer.get()});
            }).find("exists already"),
            std::string::npos);
}

TEST(Checkpoints, PartialWritesAreIgnoredAndReported) {
  testing::DataDir dir("checkpoint_partial");
  TrainingRun run;
  run.step();
  save_checkpoint(dir.path("run"), 5, {&run.model, run.optimizer.get()});
  // A crash after the rename but before the marker, and one in the middle of writing.
  const std::string unmarked = save_checkpoint(dir.path("run"), 9, {&run.model, run.optimizer.get()});
  fs::remove(unmarked + "/COMMITTED");
  fs::create_directories(dir.path("run/checkpoints/.partial-step-00000012-999"));
  const CheckpointScan scan = find_checkpoints(dir.path("run"));
  EXPECT_EQ(scan.step, 5);
  ASSERT_EQ(scan.ignored.size(), 2u);
  EXPECT_NE(scan.ignored[0].find(".partial-step-00000012-999: a write that did not finish"),
            std::string::npos);
  EXPECT_NE(scan.ignored[1].find("step-00000009: no COMMITTED marker"), std::string::npos);
  EXPECT_NE(testing::error_of([&] { load_checkpoint(unmarked); }).find("was not finished"),
            std::string::npos);
}

TEST(Checkpoints, KeepTheLastKAndEveryNth) {
  testing::DataDir dir("checkpoint_keep");
  TrainingRun run;
  for (int64_t step = 1; step <= 7; ++step)
    save_checkpoint(dir.path("run"), step, {&run.model, run.optimizer.get()},
                    {.keep_last = 2, .keep_every = 3});
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path("run/checkpoints")))
    left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"step-00000003", "step-00000006", "step-00000007"}));
}

}  // namespace
}  // namespace dew::train
