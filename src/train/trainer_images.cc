// The Trainer's evaluation and samples for an image model: the objective's loss on held-out images
// with the same draws at every evaluation, and a grid of samples per class as a PNG.
#include <dew/autodiff.h>
#include <dew/ops.h>
#include <dew/train.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "train/trainer_run.h"

namespace dew::train {

namespace fs = std::filesystem;

void Trainer::evaluate_images(Run& run) {
  NoGrad no_grad;
  data::Chain held_out = eval_chain_();
  const Dit model = run.model.image().to(config_.compute);  // as the training steps compute
  const DType dtype = config_.compute;
  double weighted = 0;
  int64_t images = 0;
  for (int64_t b = 0; b < config_.eval_batches; ++b) {
    std::optional<data::Batch> batch = held_out.next_batch();
    if (!batch) break;
    DEW_REQUIRE(batch->images.defined(),
                "[train] the held-out chain holds tokens; an image model evaluates on images");
    const int64_t n = batch->real_rows;
    const Tensor x0 = batch->images.slice(0, 0, n).contiguous();
    const Tensor labels = model.config().num_classes > 0 ? batch->labels.slice(0, 0, n).contiguous()
                                                         : Tensor();  // never dropped
    const diffusion::TrainingNetwork network = [&](const Tensor& x, const Tensor& t, const Tensor& r) {
      return model.forward(cast(x, dtype), t, labels, r);
    };
    // The same draws at every evaluation: keyed by the batch's number, not the step.
    weighted +=
        diffusion::diffusion_loss(network, x0, config_.diffusion, config_.seed ^ 0x6576616cull, uint64_t(b))
            .loss.to_f64_vector()[0] *
        double(n);
    images += n;
  }
  run.outcome.eval_loss = images ? weighted / double(images) : NAN;
  run.metrics << nlohmann::json{{"step", run.step},
                                {"time", std::chrono::duration<double>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count()},
                                {"eval_loss", run.outcome.eval_loss},
                                {"eval_images", images}}
                     .dump()
              << "\n"
              << std::flush;
  say(fmt::format("step {}: eval loss {:.4f} over {} held-out images", run.step, run.outcome.eval_loss,
                  images));
}

void Trainer::sample_images(Run& run) {
  const TrainedModel averaged = run.ema ? run.ema->applied_to(run.model) : TrainedModel();
  // In the steps' compute dtype: bf16 mixed precision samples in bf16.
  const Dit model = (run.ema ? averaged : run.model).image().to(config_.compute);
  const Tensor samples = train::sample_images(model, config_.diffusion, config_.image_samples);
  const fs::path dir = fs::path(run_dir_) / "samples";
  fs::create_directories(dir);
  const std::string path = (dir / fmt::format("step-{:08d}.png", run.step)).string();
  save_image_grid(samples, model.config().num_classes > 0 ? config_.image_samples.per_class : 8, path);
  say(fmt::format(
      "step {}: samples {} ({} steps of {}{})", run.step, path, config_.image_samples.steps,
      config_.image_samples.sampler,
      config_.image_samples.cfg != 1 ? fmt::format(", guidance {}", config_.image_samples.cfg) : ""));
}

}  // namespace dew::train
