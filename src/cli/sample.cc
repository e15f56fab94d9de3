// `dew sample --model DIR`: images from a trained image model (a checkpoint or a run directory), drawn
// with a sampler and classifier-free guidance and written as one PNG grid: a row per class. The model's
// objective comes from diffusion.json beside it; its weight average (ema.safetensors) is used when
// there is one, unless --no-ema.
#include <dew/error.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include <chrono>
#include <filesystem>

#include "cli/commands.h"
#include "io/files.h"

namespace dew::cli {
namespace {

struct SampleOptions {
  std::string model, sampler = "dpmpp-2m", out = "samples.png", precision = "auto";
  int64_t steps = 20, count = 8;
  double cfg = 1;
  std::vector<int64_t> classes;
  uint64_t seed = 0;
  bool no_ema = false;
};

int run_sample(const SampleOptions& o) {
  namespace fs = std::filesystem;
  const std::string dir = train::model_directory(o.model);
  const fs::path objective_path = fs::path(dir) / "diffusion.json";
  DEW_REQUIRE(
      fs::exists(objective_path),
      "[sample] {} has no diffusion.json naming the objective it was trained with; expected a checkpoint of "
      "an image model (dew train with a [diffusion] table writes one)",
      dir);
  const diffusion::ObjectiveOptions objective =
      diffusion::parse_objective_json(read_text_file(objective_path.string()), objective_path.string());
  train::TrainedModel model = train::TrainedModel::load(dir);
  DEW_REQUIRE(model.is_image(),
              "[sample] {} holds a {} model; dew sample draws from image models (dit, unet)", dir,
              model.model_type());
  const fs::path ema = fs::path(dir) / "ema.safetensors";
  const bool averaged = !o.no_ema && fs::exists(ema);
  if (averaged) {
    train::Ema average(model.parameters(), 0.5, false);  // the decay plays no part in reading one
    average.load(ema.string());
    model = average.applied_to(model);
  }
  // auto: bf16 where the CPU multiplies bf16 natively (AVX-512 BF16), as `dew train` computes.
  DEW_REQUIRE(o.precision == "auto" || o.precision == "f32" || o.precision == "bf16",
              "[sample] --precision {}; expected auto, f32 or bf16", o.precision);
  const DType dtype = o.precision == "bf16" || (o.precision == "auto" && cpu_features().avx512bf16)
                          ? DType::bf16
                          : DType::f32;
  const ImageModel network = model.image().to(dtype);
  const auto start = std::chrono::steady_clock::now();
  const Tensor images = train::sample_images(network, objective,
                                             {.sampler = o.sampler,
                                              .steps = o.steps,
                                              .cfg = o.cfg,
                                              .per_class = o.count,
                                              .seed = o.seed,
                                              .classes = o.classes});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  train::save_image_grid(images, model.image().conditioning().num_classes > 0 ? o.count : 8, o.out);
  fmt::print("{}: {} images, {} in {} steps{}, {} weights in {}; {:.1f} images/s\n", o.out, images.size(0),
             o.sampler, o.steps, o.cfg != 1 ? fmt::format(", guidance {}", o.cfg) : "",
             averaged ? "averaged" : "trained", dtype_name(dtype), double(images.size(0)) / seconds);
  return 0;
}

}  // namespace

void add_sample(CLI::App& app, int& status) {
  auto* cmd =
      app.add_subcommand("sample", "images from a trained image model, as one PNG grid (a row per class)");
  SampleOptions& o = runs(cmd, status, run_sample);
  cmd->add_option("-m,--model", o.model, "a checkpoint of an image model, or its run directory")->required();
  cmd->add_option("--sampler", o.sampler, "ddpm, ddim, euler, heun, dpmpp-2m, flow-euler, or meanflow")
      ->default_val("dpmpp-2m");
  cmd->add_option("--steps", o.steps, "sampling steps")->default_val(20);
  cmd->add_option("--cfg", o.cfg, "classifier-free guidance scale (1: none)")->default_val(1.0);
  cmd->add_option("--class", o.classes, "a class to draw (repeatable); default: every class");
  cmd->add_option("--count", o.count, "images per class")->default_val(8);
  cmd->add_option("--seed", o.seed, "the noise's seed")->default_val(0);
  cmd->add_option("--out", o.out, "the PNG to write")->default_val("samples.png");
  cmd->add_flag("--no-ema", o.no_ema, "the trained weights, not their average");
  cmd->add_option("--precision", o.precision, "auto (bf16 on CPUs with AVX-512 BF16), f32 or bf16")
      ->default_val("auto");
}

}  // namespace dew::cli
