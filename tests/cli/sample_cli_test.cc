// The image job from the command line: `dew train` of a small DiT on IDX images, `dew sample` from its
// run directory (a grid a row per class, guidance, the weight average), `dew report` showing its grids,
// and the refusals a user meets: a sampler or class that does not exist, a language model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "data_files.h"
#include "io/png.h"
#include "run_dew.h"
#include "train_config.h"

namespace {

using dew::testing::run_dew;

TEST(SampleCli, TrainSampleAndReportAnImageModel) {
  dew::testing::DataDir dir("sample_cli");
  dir.write_idx_images("images.idx", "labels.idx", 32, 8, 3,
                       [](int n, int p) { return p % 8 / 3 == n % 3 ? 200 : 20; });
  dir.write("dit.toml", std::string("[model]\n") + dew::testing::kTinyDit + R"([diffusion]
objective = "flow"
[train]
steps = 4
log_every = 2
ema_decay = 0.9
precision = "f32"
[sample]
every = 4
steps = 3
per_class = 2
classifier = "clf"
classifier_steps = 20
quality_samples = 9
[eval]
every = 4
batches = 2
[eval.data.source]
kind = "idx_images"
images = "images.idx"
labels = "labels.idx"
[[eval.data.stage]]
kind = "batch"
size = 8
)" + dew::testing::kTinyImagesData);
  const std::string run = dir.path("run");
  auto trained = run_dew("train " + dir.path("dit.toml") + " --run-dir " + run);
  ASSERT_EQ(trained.exit_code, 0) << trained.out;
  EXPECT_NE(trained.out.find("images/s"), std::string::npos) << trained.out;
  EXPECT_TRUE(std::filesystem::exists(run + "/samples/step-00000004.png"));
  // The classifier trained first, tested on the held-out images, then the samples' measures.
  EXPECT_NE(trained.out.find("the image classifier reads"), std::string::npos) << trained.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path("clf/accuracy.json")));
  std::ifstream metrics(run + "/metrics.jsonl");
  const std::string lines((std::istreambuf_iterator<char>(metrics)), {});
  EXPECT_NE(lines.find("\"frechet_distance\""), std::string::npos) << lines;
  EXPECT_NE(lines.find("\"sample_accuracy\""), std::string::npos) << lines;

  auto sampled = run_dew("sample --model " + run +
                         " --sampler heun --steps 4 --cfg 2 --class 1 --class 2 --count 3 --out " +
                         dir.path("grid.png"));
  ASSERT_EQ(sampled.exit_code, 0) << sampled.out;
  EXPECT_NE(sampled.out.find("6 images, heun in 4 steps, guidance 2, averaged weights"), std::string::npos)
      << sampled.out;
  const dew::PngImage grid = dew::read_png(dir.path("grid.png"));
  EXPECT_EQ(grid.width, 3 * 8 + 4 * 2);   // 3 a row
  EXPECT_EQ(grid.height, 2 * 8 + 3 * 2);  // classes 1 and 2

  auto report = run_dew("report " + run);
  ASSERT_EQ(report.exit_code, 0) << report.out;
  std::ifstream html(run + "/report.html");
  const std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(page.find("data:image/png;base64,"), std::string::npos);
  EXPECT_NE(page.find("images/s"), std::string::npos);
  EXPECT_NE(page.find("Fréchet distance"), std::string::npos);

  auto bad_sampler = run_dew("sample --model " + run + " --sampler dpm++ --out " + dir.path("x.png"));
  EXPECT_EQ(bad_sampler.exit_code, 1);
  EXPECT_NE(bad_sampler.out.find("expected one of ddpm, ddim, euler, heun, dpmpp-2m, flow-euler"),
            std::string::npos)
      << bad_sampler.out;
  auto bad_class = run_dew("sample --model " + run + " --class 3 --out " + dir.path("x.png"));
  EXPECT_EQ(bad_class.exit_code, 1);
  EXPECT_NE(bad_class.out.find("class 3; the model has classes 0 to 2"), std::string::npos) << bad_class.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path("x.png")));
}

}  // namespace
