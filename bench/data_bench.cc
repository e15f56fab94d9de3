// `dew bench data` (data_bench.h).
#include "data_bench.h"

#include <dew/data.h>
#include <dew/error.h>
#include <dew/tokenizer.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenize_bench.h"

namespace dew::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int run_data_bench(const DataBenchOptions& o) {
  const std::string tokenizer_path = o.tokenizer.empty() ? oracle_tokenizer("llama3") : o.tokenizer;
  const std::string text = brown_text();
  const std::string file = (std::filesystem::temp_directory_path() / "dew_bench_data_brown.txt").string();
  std::ofstream(file) << text;
  const std::vector<std::string_view> lines = lines_of(text);  // brown_text has no empty line

  // Runs alternate (tokenizer alone, chain at 1 worker, chain at 2) so that drift in this machine's
  // speed falls on all three alike; each figure is the best of its runs.
  double alone = 1e30;
  int64_t tokens = 0;
  const int worker_counts[2] = {1, 2};
  double best[2] = {1e30, 1e30};
  std::vector<data::StageStats> stats[2];
  for (int rep = 0; rep < o.reps; ++rep) {
    {
      const Tokenizer tokenizer = Tokenizer::load(tokenizer_path);  // fresh, as the chain's is
      const auto start = Clock::now();
      tokens = 0;
      for (std::string_view line : lines)
        tokens += int64_t(tokenizer.encode(line, {.add_special_tokens = true}).size());
      alone = std::min(alone, since(start));
    }
    for (int k = 0; k < 2; ++k) {
      data::Chain chain = data::Chain::text_files({file}, data::TextUnit::line);
      chain.tokenize(tokenizer_path, {.workers = worker_counts[k]})
          .pack(o.T)
          .batch(o.batch)
          .cache({.enabled = false});
      const auto start = Clock::now();
      while (chain.next_batch()) {
      }
      const double seconds = since(start);
      if (seconds < best[k]) best[k] = seconds, stats[k] = chain.stats();
    }
  }
  // The same chain served by the cache (in a scratch directory): built once, then read.
  const std::string cache_dir = (std::filesystem::temp_directory_path() / "dew_bench_data_cache").string();
  std::filesystem::remove_all(cache_dir);
  double cached = 1e30, build = 0;
  for (int rep = 0; rep <= o.reps; ++rep) {
    data::Chain chain = data::Chain::text_files({file}, data::TextUnit::line);
    chain.tokenize(tokenizer_path).pack(o.T).batch(o.batch).cache({.dir = cache_dir});
    const auto start = Clock::now();
    while (chain.next_batch()) {
    }
    if (rep == 0)
      build = since(start);
    else
      cached = std::min(cached, since(start));
  }
  std::filesystem::remove_all(cache_dir);
  fmt::print("data chain on the Brown corpus: {} lines, {:.2f} MB, {} tokens ({}), best of {}\n",
             lines.size(), double(text.size()) / 1e6, tokens, tokenizer_path, o.reps);
  fmt::print("tokenizer alone: {:.3f} s, {:.0f} tokens/s\n\n", alone, double(tokens) / alone);
  fmt::print("{:<8} {:<10} {:>10} {:>12} {:>14} {:>9}\n", "workers", "stage", "records", "records/s",
             "tokens/s", "seconds");
  nlohmann::json runs = nlohmann::json::array();
  for (int k = 0; k < 2; ++k) {
    nlohmann::json stages = nlohmann::json::array();
    for (const data::StageStats& s : stats[k]) {
      const double t = std::max(s.seconds, 1e-9);
      fmt::print("{:<8} {:<10} {:>10} {:>12.0f} {:>14.0f} {:>9.4f}\n", worker_counts[k], s.stage,
                 s.records_out, double(s.records_out) / t, double(s.tokens_out) / t, s.seconds);
      stages.push_back(
          {{"stage", s.stage}, {"records", s.records_out}, {"tokens", s.tokens_out}, {"seconds", s.seconds}});
    }
    fmt::print("{:<8} {:<10} {:>49.3f} s: {:+.1f}% against the tokenizer alone\n\n", worker_counts[k],
               "chain", best[k], 100 * (best[k] / alone - 1));
    runs.push_back({{"workers", worker_counts[k]},
                    {"seconds", best[k]},
                    {"overhead", best[k] / alone - 1},
                    {"stages", stages}});
  }
  fmt::print(
      "cache: built in {:.3f} s (the chain at 1 worker, writing the file); read back in {:.3f} s, {:.0f} "
      "tokens/s\n",
      build, cached, double(tokens) / cached);
  fmt::print("{}\n", nlohmann::json{{"bench", "data"},
                                    {"lines", lines.size()},
                                    {"tokens", tokens},
                                    {"tokenizer_alone_s", alone},
                                    {"cache_build_s", build},
                                    {"cache_read_s", cached},
                                    {"runs", runs}}
                         .dump());
  return 0;
}

}  // namespace dew::bench
