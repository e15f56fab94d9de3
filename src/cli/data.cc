// dew data show|stats|preview CONFIG: the data chain of a config, seen from the command line.
#include <dew/data.h>
#include <dew/error.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>

#include "cli/commands.h"

namespace dew::cli {
namespace {

struct DataOptions {
  std::string what;  // show, stats or preview
  std::string config;
  std::vector<std::string> overrides;
  int64_t batches = 0;  // 0: until the chain ends
};

using data::Chain;

// Runs the chain `limit` batches (records without batch), or to its end when limit is 0.
int64_t drain(Chain& chain, bool batched, int64_t limit) {
  int64_t n = 0;
  while (limit == 0 || n < limit) {
    const bool more = batched ? chain.next_batch().has_value() : chain.next_record().has_value();
    if (!more) break;
    ++n;
  }
  return n;
}

void print_stats(const Chain& chain, int64_t produced, double seconds) {
  const std::vector<data::StageStats> stats = chain.stats();
  fmt::print("{:<3} {:<10} {:>12} {:>12} {:>10} {:>14} {:>9} {:>9} {:>12}\n", "#", "stage", "records in",
             "records out", "dropped", "tokens out", "padding", "seconds", "records/s");
  nlohmann::json stages = nlohmann::json::array();
  for (size_t i = 0; i < stats.size(); ++i) {
    const data::StageStats& s = stats[i];
    const double padding = s.tokens_out ? double(s.padding_tokens) / double(s.tokens_out) : 0;
    const double rate = s.seconds > 0 ? double(s.records_out) / s.seconds : 0;
    fmt::print("{:<3} {:<10} {:>12} {:>12} {:>10} {:>14} {:>8.2f}% {:>9.3f} {:>12.0f}\n", i, s.stage,
               s.records_in, s.records_out, s.dropped, s.tokens_out, 100 * padding, s.seconds, rate);
    stages.push_back({{"stage", s.stage},
                      {"records_in", s.records_in},
                      {"records_out", s.records_out},
                      {"dropped", s.dropped},
                      {"tokens_out", s.tokens_out},
                      {"padding_tokens", s.padding_tokens},
                      {"seconds", s.seconds}});
  }
  fmt::print("{}\n", nlohmann::json{{"produced", produced}, {"seconds", seconds}, {"stages", stages}}.dump());
}

// Each row of a batch as its documents' text (or ids without a tokenizer).
void print_batch(const data::Batch& batch, const Tokenizer* tokenizer) {
  const int64_t rows = batch.tokens.shape()[0], width = batch.tokens.shape()[1];
  const int64_t* tokens = batch.tokens.data<int64_t>();
  const int64_t* segments = batch.segment_ids.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    nlohmann::json documents = nlohmann::json::array();
    int64_t padding = 0;
    for (int64_t t = 0; t < width;) {
      const int64_t segment = segments[r * width + t];
      int64_t end = t;
      while (end < width && segments[r * width + end] == segment) ++end;
      if (segment == 0) {
        padding += end - t;
      } else {
        std::vector<int64_t> ids(tokens + r * width + t, tokens + r * width + end);
        documents.push_back(tokenizer ? nlohmann::json(tokenizer->decode(ids)) : nlohmann::json(ids));
      }
      t = end;
    }
    fmt::print(
        "{}\n",
        nlohmann::json{{"batch", batch.index}, {"row", r}, {"documents", documents}, {"padding", padding}}
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

// Whether the chain a description describes comes to an end: a source with epochs, a mixture with
// a member that ends, a schedule whose last phase ends.
bool ends(const nlohmann::json& description) {
  if (description.contains("schedule")) return ends(description["schedule"].back()["chain"]);
  const nlohmann::json& first = description["stages"][0];
  if (first["stage"] != "mix") return first.value("epochs", 1) != 0;
  for (const nlohmann::json& member : first["members"])
    if (ends(member)) return true;
  return false;
}

int run_data(const DataOptions& options) {
  Chain chain = data::chain_from_config(options.config, options.overrides);
  const nlohmann::json description = nlohmann::json::parse(chain.description());
  const bool batched = description.contains("batch") || description.contains("schedule");
  if (options.what == "show") {
    fmt::print("{}", chain.show());
    return 0;
  }
  DEW_REQUIRE(options.batches >= 0, "--batches {}: expected a count (0: until the chain ends)",
              options.batches);
  DEW_REQUIRE(options.batches > 0 || ends(description),
              "{}: the chain repeats forever (its sources have epochs = 0); give --batches N",
              options.config);
  if (options.what == "stats") {
    const auto start = std::chrono::steady_clock::now();
    const int64_t produced = drain(chain, batched, options.batches);
    print_stats(chain, produced,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return 0;
  }
  for (int64_t n = 0; n < options.batches; ++n) {
    if (batched) {
      std::optional<data::Batch> batch = chain.next_batch();
      if (!batch) break;
      print_batch(*batch, chain.tokenizer());
    } else {
      std::optional<data::Record> r = chain.next_record();
      if (!r) break;
      nlohmann::json line = {{"record", n}, {"origin", r->origin}};
      if (!r->tokens.empty())
        line["tokens"] = r->tokens;
      else
        line["text"] = r->text;
      fmt::print("{}\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  return 0;
}

}  // namespace

void add_data(CLI::App& app, int& status) {
  auto options = std::make_shared<DataOptions>();
  DataOptions& data = *options;
  auto* data_cmd = app.add_subcommand("data", "the data chain of a config: its stages, statistics, batches");
  data_cmd->require_subcommand(1);
  for (const auto& [name, help] :
       {std::pair{"show", "print the chain's expanded stages"},
        {"stats", "run the chain and report records, tokens, padding and time per stage"},
        {"preview", "print a few batches, decoded, as JSONL"}}) {
    CLI::App* cmd = data_cmd->add_subcommand(name, help);
    cmd->add_option("config", data.config, "a TOML config with a [data] table (docs/data.md)")->required();
    cmd->add_option("--set", data.overrides, "override a config key: data.stage.2.seed=5 (repeatable)")
        ->allow_extra_args(false);
    CLI::Option* batches = nullptr;
    if (std::string(name) != "show")
      batches =
          cmd->add_option("--batches", data.batches,
                          "stop after this many batches, or records without batch (preview: 2; stats: all)");
    cmd->callback([options, &status, batches, name = std::string(name)] {
      options->what = name;
      if (name == "preview" && batches->count() == 0) options->batches = 2;
      status = run_data(*options);
    });
  }
}

}  // namespace dew::cli
