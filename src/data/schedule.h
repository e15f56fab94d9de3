// schedule: batches from a sequence of phases — each a chain ending in batch (a mixture, typically)
// with a budget of tokens — switching on the committed-token clock: the tokens of the global batches
// returned so far, which a trainer commits one optimizer update at a time, so the clock at a
// checkpoint is the committed one. Boundaries are exact: a budget must be a whole number of batches.
#pragma once

#include <dew/data.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dew::data::detail {

class Schedule {
 public:
  explicit Schedule(std::vector<Phase> phases);
  std::optional<Batch> next_batch();
  nlohmann::json position() const;  // {"phase", "phase_tokens", "phases": [each phase's position]}
  void resume(const nlohmann::json& position);
  nlohmann::json description() const;
  std::string show() const;
  std::vector<StageStats> stats() const;
  const Tokenizer* tokenizer() const { return phases_[0].chain.tokenizer(); }
  int64_t batches() const { return batches_; }

 private:
  std::vector<Phase> phases_;
  int64_t batch_tokens_ = 0;  // global rows x T, the same in every phase
  size_t phase_ = 0;
  int64_t phase_tokens_ = 0, batches_ = 0;
};

}  // namespace dew::data::detail
