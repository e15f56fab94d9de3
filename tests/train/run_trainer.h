// Test helper: a Trainer run to its end, or stopped after step `stop_at` (0: never), with each step's
// loss by step.
#pragma once

#include <dew/train.h>

#include <atomic>
#include <map>

namespace dew::testing {

struct RunLosses {
  std::map<int64_t, double> losses;
  train::Trainer::Outcome outcome;
};

inline RunLosses run_trainer(const train::TrainerConfig& config, data::Chain chain, const std::string& run_dir,
                             std::function<data::Chain()> eval_chain, int64_t stop_at = 0) {
  train::Trainer trainer(config, std::move(chain), run_dir, std::move(eval_chain));
  RunLosses out;
  std::atomic<bool> stop{false};
  trainer.on_step = [&](const train::Trainer::Progress& p) {
    out.losses[p.step] = p.loss;
    if (p.step == stop_at) stop = true;
  };
  out.outcome = trainer.run(&stop);
  return out;
}

}  // namespace dew::testing
