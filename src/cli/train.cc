// dew train CONFIG: trains the config's model on its data in a run directory, resuming from the
// newest committed checkpoint there. SIGINT or SIGTERM finish the step, write a checkpoint and exit 0
// (NOTE [signals by sigwait]).
#include <dew/data.h>
#include <dew/error.h>
#include <dew/image_quality.h>
#include <dew/train.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "io/files.h"
#include "io/toml.h"
#include "train/clock_time.h"

namespace dew::cli {
namespace {

struct TrainOptions {
  std::string config, run_dir;
  std::string restart;  // a checkpoint, run or model directory: a new run from its weights only
  std::vector<std::string> overrides;
  bool profile = false;  // where the step time goes, printed at the end and kept in RUN_DIR/profile.json
};

// A config's [tokenizer] table: unless `path` holds a tokenizer.json already, train a byte-level BPE
// there on the text the [data] chain tokenizes (its source, one epoch, and the stages before tokenize).
void prepare_tokenizer(const std::string& config_path, const std::vector<std::string>& overrides) {
  const toml::table root = load_toml(config_path, overrides);
  const toml::table* table = root["tokenizer"].as_table();
  if (!table) return;
  const TomlFields fields(*table, config_path + ": tokenizer");
  fields.only({"path", "vocab_size", "special_tokens"});
  const std::filesystem::path base = std::filesystem::path(config_path).parent_path();
  const std::filesystem::path path = (base / fields.text("path")).lexically_normal();
  if (std::filesystem::is_regular_file(path / "tokenizer.json")) return;
  TokenizerTrainOptions train;
  train.vocab_size = fields.integer_or("vocab_size", 8192);
  if (fields.has("special_tokens")) train.special_tokens = fields.texts("special_tokens");
  train.output = path.string();
  fmt::print(stderr, "training the tokenizer {} on the [data] chain's text first\n", train.output);
  data::Chain text = data::text_chain_from_config(config_path, overrides);
  std::vector<std::string> records;
  while (std::optional<data::Record> r = text.next_record()) records.push_back(std::move(r->text));
  const std::vector<std::string_view> documents(records.begin(), records.end());
  write_trained_tokenizer(documents, train, fmt::format("{} documents", documents.size()));
}

// Trains options.config until done or until `stop` is set (after a step, with a checkpoint).
int train_with(const TrainOptions& options, const std::atomic<bool>& stop) {
  const std::string run_dir = options.run_dir.empty()
                                  ? "runs/" + std::filesystem::path(options.config).stem().string()
                                  : options.run_dir;
  train::TrainerConfig config = train::trainer_config_from_toml(options.config, options.overrides);
  if (!options.restart.empty())
    config.init_from = std::filesystem::absolute(options.restart).lexically_normal().string();
  config.peak_flops = train::peak_flops(config.device, config.compute);
  std::function<data::Chain()> held_out;
  if (config.eval_every)
    held_out = [&options] { return data::chain_from_config(options.config, options.overrides, "eval.data"); };
  train::Trainer trainer(config, data::chain_from_config(options.config, options.overrides), run_dir,
                         held_out);
  trainer.profile = options.profile;
  // On a terminal one live line (step, loss, lr, tokens/s, ETA) is rewritten each step and the log's
  // step lines stay in metrics.jsonl; otherwise every log line is printed as it comes, with its elapsed
  // time and ETA.
  const bool terminal = ::isatty(::fileno(stderr));
  const bool image = is_image_model_config(config.model_json, "model config");
  trainer.on_step = [&](const train::Trainer::Progress& p) {
    if (!terminal) return;
    fmt::print(stderr, "\r\033[Kstep {}/{}  loss {:.4f}  lr {:.3g}  {:.0f} {}/s  ETA {}", p.step, p.steps,
               p.loss, p.lr, p.tokens_per_s, image ? "images" : "tokens", train::clock_time(p.eta_s));
  };
  trainer.on_log = [&](const std::string& line) {
    const bool step_line =
        line.rfind("step ", 0) == 0 && line.find('/') < line.find(' ', 5);  // "step 20/360 ..."
    if (terminal && step_line) return;                                      // the live line shows it
    fmt::print(stderr, "{}{}\n", terminal ? "\r\033[K" : "", line);
  };
  const train::Trainer::Outcome outcome = trainer.run(&stop);
  if (outcome.rank != 0) return 0;  // data parallel: rank 0 reports
  if (terminal) fmt::print(stderr, "\n");
  std::fflush(stderr);
  if (outcome.finished_already) {
    fmt::print(
        "{} finished at step {} of {} already (checkpoint {}); nothing to do. Train it further with "
        "--set train.steps=N, or give another --run-dir for a new run\n",
        run_dir, outcome.step, config.steps, outcome.checkpoint);
    return 0;
  }
  if (outcome.stopped)
    fmt::print("stopped at step {} of {}; checkpoint {}; run `dew train` in {} again to resume\n",
               outcome.step, config.steps, outcome.checkpoint, run_dir);
  else
    fmt::print("trained {} steps in {}; loss {:.4f}; checkpoint {}\n", outcome.step, run_dir,
               outcome.last_loss, outcome.checkpoint);
  if (!std::isnan(outcome.eval_loss) && image)
    fmt::print("held-out loss {:.4f}\n", outcome.eval_loss);
  else if (!std::isnan(outcome.eval_loss))
    fmt::print("held-out loss {:.4f} nats; the held-out tokens' unigram entropy {:.4f} nats\n",
               outcome.eval_loss, outcome.unigram_entropy);
  if (outcome.profile && outcome.profile->steps > 0)
    fmt::print("{}(also in {}/profile.json)\n", train::format_step_profiles(*outcome.profile), run_dir);
  else if (outcome.profile)
    fmt::print(
        "no profile: the first step of a process warms up and is not profiled; train 2 steps or more\n");
  std::fflush(stdout);
  return 0;
}

// A config's [sample] classifier (an image model's quality measure, image_quality.h): unless its
// directory holds one already, train it on the [data] chain's images for classifier_steps (2000) steps,
// and report (and keep, in accuracy.json) its accuracy on every image of the [eval.data] chain.
void prepare_classifier(const std::string& config_path, const std::vector<std::string>& overrides) {
  const toml::table root = load_toml(config_path, overrides);
  const toml::table* sample = root["sample"].as_table();
  if (!sample || !sample->contains("classifier")) return;
  const TomlFields fields(*sample, config_path + ": sample");
  const std::filesystem::path dir =
      (std::filesystem::path(config_path).parent_path() / fields.text("classifier")).lexically_normal();
  if (std::filesystem::is_regular_file(dir / "config.json")) return;
  const int64_t classes = root.at_path("model.num_classes").value<int64_t>().value_or(0);
  DEW_REQUIRE(classes >= 2, "{}: [sample] classifier needs the model's num_classes (2 or more) to learn them",
              config_path);
  const int64_t steps = fields.integer_or("classifier_steps", 2000);
  fmt::print(stderr, "training the image classifier {} on the [data] chain's images first ({} steps)\n",
             dir.string(), steps);
  data::Chain chain = data::chain_from_config(config_path, overrides);
  const train::ImageClassifier classifier = train::train_image_classifier(chain, classes, steps, 1e-3, 0);
  data::Chain held_out = data::chain_from_config(config_path, overrides, "eval.data");
  int64_t right = 0, images = 0;
  while (std::optional<data::Batch> batch = held_out.next_batch()) {
    const int64_t n = batch->real_rows;
    right +=
        int64_t(std::llround(train::classifier_accuracy(classifier, batch->images.slice(0, 0, n).contiguous(),
                                                        batch->labels.slice(0, 0, n).contiguous()) *
                             double(n)));
    images += n;
  }
  DEW_REQUIRE(images > 0, "{}: the [eval.data] chain holds no images to test the classifier on", config_path);
  classifier.save(dir.string());
  const double accuracy = double(right) / double(images);
  write_text_file(
      (dir / "accuracy.json").string(),
      nlohmann::json{{"test_accuracy", accuracy}, {"test_images", images}, {"steps", steps}}.dump(2) + "\n");
  fmt::print(stderr, "the image classifier reads {:.2f}% of the {} held-out images right\n", 100 * accuracy,
             images);
}

int run_train(const TrainOptions& options) {
  const StopSignals stop;  // first: every thread started after it has the signals blocked
  TrainOptions with_config = options;
  if (with_config.config.empty()) {  // the default job
    with_config.config = std::string(DEW_SOURCE_DIR) + "/examples/default.toml";
    // Its corpus and tokenizer live in the source tree too: an installed dew away from it needs a config.
    DEW_REQUIRE(std::filesystem::is_regular_file(with_config.config),
                "the default job is {} of the source tree this dew was built from, which is not here; give a "
                "config: dew train CONFIG.toml (docs/training.md)",
                with_config.config);
    if (with_config.run_dir.empty()) with_config.run_dir = "runs/default";
  }
  prepare_tokenizer(with_config.config, with_config.overrides);
  prepare_classifier(with_config.config, with_config.overrides);
  return train_with(with_config, stop.requested());
}

int run_report(const std::string& run_dir) {
  fmt::print("{}\n", train::write_report(run_dir));
  return 0;
}

}  // namespace

void add_train(CLI::App& app, int& status) {
  auto* train_cmd =
      app.add_subcommand("train", "train a config's model on its data, resuming a run directory");
  TrainOptions& train = runs(train_cmd, status, run_train);
  train_cmd->add_option(
      "config", train.config,
      "a TOML config: [model], [train], [optimizer], [schedule], [data]; none: the default job "
      "(examples/default.toml)");
  train_cmd->add_option("--run-dir", train.run_dir,
                        "where metrics and checkpoints go (default: runs/CONFIG_NAME)");
  train_cmd->add_option("--set", train.overrides, "override a config key: train.steps=200 (repeatable)")
      ->allow_extra_args(false);
  train_cmd->add_option("--restart", train.restart,
                        "begin a new run from the weights (only) of a checkpoint, a run directory's newest "
                        "checkpoint, or a model directory");
  train_cmd->add_flag("--profile", train.profile,
                      "print where the step time goes (GEMMs by shape and role, attention, norms, ..., page "
                      "faults) over every step but the first, and write RUN_DIR/profile.json");
}

void add_report(CLI::App& app, int& status) {
  auto run_dir = std::make_shared<std::string>();
  auto* report_cmd = app.add_subcommand("report", "write RUN_DIR/report.html: charts of a run's metrics");
  report_cmd->add_option("run_dir", *run_dir, "a `dew train` run directory")->required();
  report_cmd->callback([run_dir, &status] { status = run_report(*run_dir); });
}

}  // namespace dew::cli
