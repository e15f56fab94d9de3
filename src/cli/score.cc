// `dew score --model DIR --ids`: per-token log-likelihoods. Reads JSONL {"ids": [...]} on stdin and
// writes, per line, {"logprobs": [...]}: the n-1 log-probabilities of ids[1:], each given the ids
// before it. The text form (context/continuation) needs a tokenizer, which Dew does not have yet.
#include <dew/autodiff.h>
#include <dew/models.h>
#include <dew/ops.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "io/json.h"

namespace dew::cli {
namespace {

std::vector<double> token_logprobs(const CausalLM& model, const std::vector<int64_t>& ids) {
  const int64_t n = int64_t(ids.size());
  if (n < 2) return {};
  std::vector<double> id_values(ids.begin(), ids.end()), positions, targets;
  for (int64_t t = 0; t < n; ++t) positions.push_back(double(t));
  for (int64_t t = 1; t < n; ++t) targets.push_back(double(ids[size_t(t)]));
  const Tensor logits = model.forward(Tensor::from_values(id_values, {1, n}, DType::i64),
                                      Tensor::from_values(positions, {1, n}, DType::i64));
  // Position t predicts ids[t + 1]: the first n - 1 rows, each at its next id.
  // Log-probabilities in f32 (f64 for an f64 model) whatever the weights' dtype.
  const DType accumulate = logits.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Tensor lp = log_softmax(cast(logits.slice(1, 0, n - 1), accumulate), -1);
  return gather(lp, -1, Tensor::from_values(targets, {1, n - 1, 1}, DType::i64)).to_f64_vector();
}

}  // namespace

int run_score(const ScoreOptions& o) {
  DEW_REQUIRE(o.ids,
              "score: scoring text (context and continuation) needs a tokenizer, which Dew does not "
              "have yet; pass --ids and lines {{\"ids\": [...]}}");
  const CausalLM model =
      CausalLM::load(o.model, o.dtype.empty() ? std::optional<DType>() : parse_dtype(o.dtype));
  NoGrad inference;
  std::string line;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("stdin line {}", number);
    const nlohmann::json record = parse_json(line, where);
    DEW_REQUIRE(record.is_object(), "{}: expected an object {{\"ids\": [...]}}", where);
    const nlohmann::json& ids_json = json_member(record, "ids", nlohmann::json::value_t::array, where);
    std::vector<int64_t> ids;
    for (const auto& id : ids_json) {
      DEW_REQUIRE(
          id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < model.config().vocab_size,
          "{}: id {} is not a token id; expected an integer in [0, {})", where, id.dump(),
          model.config().vocab_size);
      ids.push_back(id.get<int64_t>());
    }
    const nlohmann::json out = {{"logprobs", token_logprobs(model, ids)}};
    std::cout << out.dump() << "\n" << std::flush;
  }
  return 0;
}

}  // namespace dew::cli
