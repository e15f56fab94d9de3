// The Trainer's evaluation and samples for an image model: the objective's loss on held-out images
// with the same draws at every evaluation, and a grid of samples per class as a PNG.
#include <dew/autodiff.h>
#include <dew/image_quality.h>
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
  const ImageModel model = run.model.image().to(
      config_.compute, run.gathers ? run.gathers->cast_for_pass() : ParameterCast());  // as the steps compute
  const GatheredPass pass(run.gathers.get(), model.parameters());
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
    const Tensor labels = model.conditioning().num_classes > 0 ? batch->labels.slice(0, 0, n).contiguous()
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
                                {"time", unix_time()},
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
  const ImageModel model =
      (run.ema ? averaged : run.model)
          .image()
          .to(config_.compute, run.gathers ? run.gathers->cast_for_pass() : ParameterCast());
  const GatheredPass pass(run.gathers.get(), model.parameters());  // every rank draws the same samples
  const Tensor samples = train::sample_images(model, config_.diffusion, config_.image_samples);
  const fs::path dir = fs::path(run_dir_) / "samples";
  const std::string path = (dir / fmt::format("step-{:08d}.png", run.step)).string();
  if (run.leader()) {
    fs::create_directories(dir);
    save_image_grid(samples, model.conditioning().num_classes > 0 ? config_.image_samples.per_class : 8,
                    path);
  }
  say(fmt::format(
      "step {}: samples {} ({} steps of {}{})", run.step, path, config_.image_samples.steps,
      config_.image_samples.sampler,
      config_.image_samples.cfg != 1 ? fmt::format(", guidance {}", config_.image_samples.cfg) : ""));
  if (!config_.quality_classifier.empty()) measure_samples(run, model);
}

void Trainer::measure_samples(Run& run, const ImageModel& model) {
  const ImageClassifier classifier = ImageClassifier::load(config_.quality_classifier);
  NoGrad no_grad;
  // As many held-out images as samples, the first of a fresh held-out chain: the same at every step.
  data::Chain held_out = eval_chain_();
  std::vector<Tensor> real;
  int64_t have = 0;
  while (have < config_.quality_samples) {
    std::optional<data::Batch> batch = held_out.next_batch();
    if (!batch) break;
    const int64_t n = std::min(batch->real_rows, config_.quality_samples - have);
    real.push_back(batch->images.slice(0, 0, n).contiguous());
    have += n;
  }
  DEW_REQUIRE(have >= 2, "[train] the held-out chain holds {} images; the sample measures need {}", have,
              config_.quality_samples);
  const int64_t classes = std::max<int64_t>(1, model.conditioning().num_classes);
  ImageSampling o = config_.image_samples;
  o.per_class = std::max<int64_t>(1, have / classes);
  o.seed += 0x7175616cull;  // "qual": other draws than the grid's
  const Tensor samples = train::sample_images(model, config_.diffusion, o);
  std::vector<double> intended;
  for (int64_t k = 0; k < classes; ++k)
    for (int64_t i = 0; i < o.per_class; ++i) intended.push_back(double(k));
  const double distance =
      frechet_distance(classifier.features(samples), classifier.features(concat(real, 0)));
  const double accuracy =
      model.conditioning().num_classes > 0
          ? classifier_accuracy(classifier, samples,
                                Tensor::from_values(intended, {int64_t(intended.size())}, DType::i64))
          : NAN;
  nlohmann::json line = {
      {"step", run.step}, {"frechet_distance", distance}, {"quality_samples", samples.size(0)}};
  if (!std::isnan(accuracy)) line["sample_accuracy"] = accuracy;
  run.metrics << line.dump() << "\n" << std::flush;
  say(fmt::format("step {}: Fréchet distance {:.3f} over {} samples and {} held-out images{}", run.step,
                  distance, samples.size(0), have,
                  std::isnan(accuracy)
                      ? ""
                      : fmt::format("; the classifier reads the intended class in {:.1f}%", 100 * accuracy)));
}

}  // namespace dew::train
