// `dew score --model DIR`: log-likelihoods with lm-evaluation-harness's loglikelihood semantics. Reads
// JSONL {"context": "...", "continuation": "..."} and writes, per line, {"loglikelihood": the summed
// log-probability of the continuation's tokens, "is_greedy": whether each is the argmax, "tokens":
// their count}. With --ids it reads {"ids": [...]} and writes {"logprobs": [...]}: the n-1
// log-probabilities of ids[1:], each given the ids before it.
#include <dew/autodiff.h>
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/tokenizer.h>
#include <dew/train.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inference_model.h"
#include "io/json.h"
#include "tokenize/utf8.h"

namespace dew::cli {
namespace {

struct ScoreOptions {
  std::string model, dtype;
  bool ids = false;
  TextArgument text;  // one text's log-likelihood instead of JSONL records
};

struct TokenScores {
  std::vector<double> logprobs;  // of ids[t + 1] given ids[..t]
  std::vector<bool> greedy;      // ids[t + 1] is the likeliest next token
};

TokenScores score_tokens(const CausalLM& model, const std::vector<int64_t>& ids) {
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
  TokenScores scores;
  scores.logprobs = gather(lp, -1, Tensor::from_values(targets, {1, n - 1, 1}, DType::i64)).to_f64_vector();
  const std::vector<double> best = argmax(lp, -1).to_f64_vector();
  for (int64_t t = 0; t + 1 < n; ++t) scores.greedy.push_back(best[size_t(t)] == targets[size_t(t)]);
  return scores;
}

std::vector<int64_t> read_ids(const nlohmann::json& record, const std::string& where, int64_t vocab_size) {
  DEW_REQUIRE(record.is_object(), "{}: expected an object {{\"ids\": [...]}}", where);
  std::vector<int64_t> ids;
  for (const auto& id : json_member(record, "ids", nlohmann::json::value_t::array, where)) {
    DEW_REQUIRE(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size,
                "{}: id {} is not a token id; expected an integer in [0, {})", where, id.dump(), vocab_size);
    ids.push_back(id.get<int64_t>());
  }
  return ids;
}

// NOTE [loglikelihood split]: lm-evaluation-harness moves the context's trailing white space to the
// front of the continuation, encodes context + continuation whole, and takes the continuation's
// tokens as those after the context's own encoding; the tokenizer's BOS (if it adds one) goes first,
// and an empty context becomes BOS (or EOS when there is none). Sequences longer than the model's
// positions lose tokens on the left.
nlohmann::json score_text(const CausalLM& model, const Tokenizer& tokenizer, const nlohmann::json& record,
                          const std::string& where) {
  DEW_REQUIRE(record.is_object(), "{}: expected an object {{\"context\": ..., \"continuation\": ...}}",
              where);
  std::string context =
      json_member(record, "context", nlohmann::json::value_t::string, where).get<std::string>();
  std::string continuation =
      json_member(record, "continuation", nlohmann::json::value_t::string, where).get<std::string>();
  const size_t kept = tokenize::trim_end(context).size();
  continuation = context.substr(kept) + continuation;
  context.resize(kept);

  std::vector<int64_t> context_ids = tokenizer.special_prefix();
  std::vector<int64_t> whole = context_ids;
  for (int64_t id : tokenizer.encode(context)) context_ids.push_back(id);
  for (int64_t id : tokenizer.encode(context + continuation)) whole.push_back(id);
  if (context_ids.empty()) {
    const auto prefix = tokenizer.bos_id() ? tokenizer.bos_id() : tokenizer.eos_id();
    DEW_REQUIRE(prefix.has_value(),
                "{}: the context is empty and the tokenizer has neither a BOS nor an EOS token "
                "to put before the continuation",
                where);
    context_ids = {*prefix};
    whole.insert(whole.begin(), *prefix);
  }
  const size_t count = whole.size() - std::min(whole.size(), context_ids.size());
  DEW_REQUIRE(count > 0, "{}: the continuation adds no tokens to the context; expected some text", where);
  const size_t limit = size_t(model.config().max_position_embeddings) + 1;  // 0 + 1: no limit (mamba2)
  if (limit > 1 && whole.size() > limit) whole.erase(whole.begin(), whole.end() - int64_t(limit));
  for (int64_t id : whole)
    DEW_REQUIRE(id < model.config().vocab_size, "{}: token id {} is outside the model's vocabulary of {}",
                where, id, model.config().vocab_size);

  const TokenScores scores = score_tokens(model, whole);
  double sum = 0;
  bool greedy = true;
  for (size_t t = scores.logprobs.size() - count; t < scores.logprobs.size(); ++t) {
    sum += scores.logprobs[t];
    greedy = greedy && scores.greedy[t];
  }
  return {{"loglikelihood", sum}, {"is_greedy", greedy}, {"tokens", count}};
}

int run_score(const ScoreOptions& o) {
  const InferenceModel loaded = load_inference_model(o.model, o.dtype);
  const CausalLM& model = loaded.model;
  const std::optional<Tokenizer> tokenizer =
      o.ids ? std::nullopt : std::optional(load_inference_tokenizer(loaded));
  NoGrad inference;
  if (const std::optional<std::string> text = o.text.get()) {
    DEW_REQUIRE(!o.ids, "score: --text and --file give text; --ids reads ids on stdin instead");
    // The whole text as a continuation of nothing (the tokenizer's BOS), and its perplexity per token.
    nlohmann::json out = score_text(model, *tokenizer, {{"context", ""}, {"continuation", *text}}, "--text");
    out["perplexity"] = std::exp(-out["loglikelihood"].get<double>() / out["tokens"].get<double>());
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::string line;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("stdin line {}", number);
    const nlohmann::json record = parse_json(line, where);
    const nlohmann::json out =
        o.ids ? nlohmann::json{{"logprobs",
                                score_tokens(model, read_ids(record, where, model.config().vocab_size))
                                    .logprobs}}
              : score_text(model, *tokenizer, record, where);
    std::cout << out.dump() << "\n" << std::flush;
  }
  return 0;
}

}  // namespace

void add_score(CLI::App& app, int& status) {
  auto* score_cmd = app.add_subcommand(
      "score", "log-likelihoods: JSONL {\"context\", \"continuation\"} in, lm-eval's loglikelihood out");
  ScoreOptions& score = runs(score_cmd, status, run_score);
  score_cmd
      ->add_option("-m,--model", score.model,
                   "a Hugging Face model directory (config.json + safetensors), or a run directory")
      ->required();
  score_cmd->add_flag("--ids", score.ids, "read {\"ids\": [...]} and write per-token log-probabilities");
  score_cmd->add_option("--dtype", score.dtype,
                        "cast the weights (f64, f32, bf16 or f16); default: the config's");
  score.text.add_to(*score_cmd, "score");
}

}  // namespace dew::cli
