// dew train CONFIG: trains the config's model on its data in a run directory, resuming from the
// newest committed checkpoint there. SIGINT or SIGTERM finish the step, write a checkpoint and exit 0.
#include <dew/data.h>
#include <dew/error.h>
#include <dew/train.h>

#include <csignal>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"

namespace dew::cli {
namespace {

std::atomic<bool> stop_requested{false};  // set by the signal handler, read after each step

extern "C" void request_stop(int) {
  stop_requested = true;
}

}  // namespace

int run_train(const TrainOptions& options) {
  const std::string run_dir = options.run_dir.empty()
                                  ? "runs/" + std::filesystem::path(options.config).stem().string()
                                  : options.run_dir;
  train::TrainerConfig config = train::trainer_config_from_toml(options.config, options.overrides);
  train::Trainer trainer(config, data::chain_from_config(options.config, options.overrides), run_dir);
  trainer.on_log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  const train::Trainer::Outcome outcome = trainer.run(&stop_requested);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (outcome.stopped)
    fmt::print("stopped at step {} of {}; checkpoint {}; run `dew train` in {} again to resume\n",
               outcome.step, config.steps, outcome.checkpoint, run_dir);
  else
    fmt::print("trained {} steps in {}; loss {:.4f}; checkpoint {}\n", outcome.step, run_dir,
               outcome.last_loss, outcome.checkpoint);
  return 0;
}

}  // namespace dew::cli
