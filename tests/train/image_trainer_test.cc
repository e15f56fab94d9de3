// The Trainer on an image model: a small DiT on synthetic IDX images trains with each diffusion
// objective, keeps a weight average, writes sample grids as PNGs, checkpoints its objective, and a
// run stopped and resumed repeats the uninterrupted one bit for bit (losses, weights, average); a
// small UNet does the same through the same Trainer.
#include <dew/data.h>
#include <dew/safetensors.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data_files.h"
#include "error_of.h"
#include "io/png.h"
#include "run_trainer.h"

namespace dew::train {
namespace {

namespace fs = std::filesystem;

std::string be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

class ImageTrainerRuns : public ::testing::Test {
 protected:
  ImageTrainerRuns() : dir_("image_trainer") {
    // 64 images of 8x8: class k is a bar in column 2k (k < 3), brightness varying.
    std::string images = std::string("\0\0\x08\x03", 4) + be32(64) + be32(8) + be32(8);
    std::string labels = std::string("\0\0\x08\x01", 4) + be32(64);
    for (int n = 0; n < 64; ++n) {
      const int k = n % 3;
      labels.push_back(char(k));
      for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) images.push_back(char(c / 2 == k ? 150 + n : 10));
    }
    dir_.write("images", images);
    dir_.write("labels", labels);
    config_.model_json = R"({"model_type": "dit", "image_size": 8, "in_channels": 1, "patch_size": 2,
        "hidden_size": 16, "depth": 1, "num_heads": 2, "num_classes": 3, "frequency_embedding_size": 16,
        "time_scale": 1000})";
    config_.steps = 6;
    config_.log_every = 2;
    config_.weight_decay = 0;
    config_.schedule = {.shape = LrSchedule::Shape::constant, .peak_lr = 1e-3};
    config_.ema_decay = 0.9;
    config_.sample_every = 3;
    config_.image_samples = {.sampler = "dpmpp-2m", .steps = 4, .cfg = 2, .per_class = 2};
    config_.eval_every = 3;
    config_.eval_batches = 1;
  }
  data::Chain chain() {
    data::Chain c = data::Chain::idx_images(dir_.path("images"), dir_.path("labels"), {.epochs = 0});
    c.shuffle(1).flip_horizontal(2).batch(8);
    return c;
  }
  std::map<int64_t, double> train(const std::string& run_dir, int64_t stop_at = 0) {
    return testing::run_trainer(
               config_, chain(), dir_.path(run_dir), [this] { return chain(); }, stop_at)
        .losses;
  }
  std::map<std::string, std::vector<double>> final_state(const std::string& run_dir) {
    std::map<std::string, std::vector<double>> out;
    const LoadedCheckpoint loaded = load_checkpoint(find_checkpoints(dir_.path(run_dir)).latest);
    for (const auto& [name, t] : loaded.model.parameters()) out[name] = t.to_f64_vector();
    const SafetensorsFile ema = SafetensorsFile::open(loaded.ema_path);
    for (const SafetensorsEntry& e : ema.header().tensors)
      out["ema." + e.name] = ema.load(e.name).to_f64_vector();
    return out;
  }
  testing::DataDir dir_;
  TrainerConfig config_;
};

TEST_F(ImageTrainerRuns, StoppedAndResumedIsTheSameRunWithItsAverageAndGrids) {
  const auto straight = train("straight");
  ASSERT_EQ(straight.size(), 6u);
  train("interrupted", 3);
  const auto second = train("interrupted");
  ASSERT_EQ(second.size(), 3u);
  for (int64_t s = 4; s <= 6; ++s) EXPECT_EQ(second.at(s), straight.at(s)) << "step " << s;
  EXPECT_EQ(final_state("interrupted"), final_state("straight"));

  const std::string checkpoint = find_checkpoints(dir_.path("straight")).latest;
  EXPECT_EQ(diffusion::parse_objective_json(
                [&] {
                  std::ifstream in(checkpoint + "/diffusion.json");
                  return std::string(std::istreambuf_iterator<char>(in), {});
                }(),
                "diffusion.json")
                .objective,
            diffusion::Objective::flow);
  // Grids at steps 3 and 6: 3 classes (rows) x 2 images of 8x8, 2-pixel gaps.
  for (const char* step : {"step-00000003.png", "step-00000006.png"}) {
    const PngImage png = read_png(dir_.path("straight/samples/") + step);
    EXPECT_EQ(png.width, 2 * 8 + 3 * 2);
    EXPECT_EQ(png.height, 3 * 8 + 4 * 2);
    EXPECT_EQ(png.channels, 1);
  }
  std::ifstream metrics(dir_.path("straight/metrics.jsonl"));
  int evals = 0, logs = 0;
  for (std::string line; std::getline(metrics, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("eval_loss")) {
      ++evals;
      EXPECT_EQ(j["eval_images"].get<int64_t>(), 8);
      continue;
    }
    ++logs;
    for (const char* key : {"images", "images_per_s", "loss", "grad_norm"})
      EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_FALSE(j.contains("perplexity"));
  }
  EXPECT_EQ(evals, 2);
  EXPECT_EQ(logs, 3);
}

TEST_F(ImageTrainerRuns, EachObjectiveTrainsAStep) {
  config_.steps = 1;
  config_.sample_every = 0;
  config_.eval_every = 0;
  for (const char* objective : {"ddpm-epsilon", "ddpm-v", "edm", "flow"}) {
    config_.diffusion.objective = diffusion::parse_objective(objective);
    const auto losses = train(std::string("objective_") + objective);
    ASSERT_EQ(losses.size(), 1u) << objective;
    EXPECT_TRUE(std::isfinite(losses.at(1)) && losses.at(1) > 0) << objective;
  }
  // MeanFlow trains a model of two times, and samples with its own sampler.
  config_.model_json = R"({"model_type": "dit", "image_size": 8, "in_channels": 1, "patch_size": 2,
      "hidden_size": 16, "depth": 1, "num_heads": 2, "num_classes": 3, "frequency_embedding_size": 16,
      "time_scale": 1000, "time_inputs": 2})";
  config_.diffusion.objective = diffusion::Objective::meanflow;
  config_.sample_every = 1;
  config_.image_samples = {.sampler = "meanflow", .steps = 1, .cfg = 1, .per_class = 1};
  const auto losses = train("objective_meanflow");
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_TRUE(fs::exists(dir_.path("objective_meanflow/samples/step-00000001.png")));
}

// The UNet trains through the same Trainer: resumed exactly, with grids, and MeanFlow's two times.
TEST_F(ImageTrainerRuns, AUnetResumesExactlyAndTrainsMeanFlow) {
  const std::string unet = R"({"model_type": "unet", "sample_size": 8, "in_channels": 1,
      "block_out_channels": [8, 16], "down_block_types": ["DownBlock2D", "AttnDownBlock2D"],
      "up_block_types": ["AttnUpBlock2D", "UpBlock2D"], "layers_per_block": 1, "norm_num_groups": 4,
      "attention_head_dim": 8, "num_classes": 3, "time_scale": 1000)";
  config_.model_json = unet + "}";
  config_.steps = 4;
  config_.sample_every = 2;
  config_.eval_every = 0;
  const auto straight = train("unet_straight");
  ASSERT_EQ(straight.size(), 4u);
  train("unet_interrupted", 2);
  const auto second = train("unet_interrupted");
  for (int64_t s = 3; s <= 4; ++s) EXPECT_EQ(second.at(s), straight.at(s)) << "step " << s;
  EXPECT_EQ(final_state("unet_interrupted"), final_state("unet_straight"));
  EXPECT_TRUE(fs::exists(dir_.path("unet_straight/samples/step-00000004.png")));

  config_.model_json = unet + R"(, "time_inputs": 2})";
  config_.steps = 1;
  config_.diffusion.objective = diffusion::Objective::meanflow;
  config_.sample_every = 1;
  config_.image_samples = {.sampler = "meanflow", .steps = 1, .cfg = 1, .per_class = 1};
  const auto meanflow = train("unet_meanflow");
  ASSERT_EQ(meanflow.size(), 1u);
  EXPECT_TRUE(std::isfinite(meanflow.at(1)) && meanflow.at(1) > 0);
  EXPECT_TRUE(fs::exists(dir_.path("unet_meanflow/samples/step-00000001.png")));
}

TEST_F(ImageTrainerRuns, ClassesTheModelDoesNotHaveAreRefused) {
  config_.steps = 1;
  config_.sample_every = 0;
  config_.eval_every = 0;
  std::vector<data::Record> records(1);
  records[0].pixels.assign(64, 1), records[0].channels = 1, records[0].height = 8, records[0].width = 8;
  records[0].label = 7;
  data::Chain seven = data::Chain::records(records, {.epochs = 0});
  seven.batch(1);
  Trainer trainer(config_, std::move(seven), dir_.path("foreign"));
  EXPECT_NE(
      testing::error_of([&] { trainer.run(); }).find("an image's class is 7; the model has classes 0 to 2"),
      std::string::npos);
}

}  // namespace
}  // namespace dew::train
