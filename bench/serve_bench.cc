// The engine driven directly (no HTTP): each level of concurrency runs twice, the first warming what is
// made once per shape (oneDNN's kernels, the allocator's blocks), the second timed.
#include "serve_bench.h"

#include <dew/models.h>
#include <dew/runtime.h>
#include <dew/serve.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "bench_models.h"
#include "ceilings.h"

namespace dew::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

struct Level {
  int64_t concurrency = 0, tokens = 0;
  double wall = 0, decode_rate = 0;  // decode_rate: one request's tokens/s after its first
  std::vector<double> first_token, gaps;
  std::string profile;  // --profile: the timed run's step time by op
};

// The op profile of `steps` engine steps that took `wall` seconds: every (op, shape) row's time a step,
// largest first, and the step's time outside every op (scheduling, sampling, tensors built per step),
// the profile's own bookkeeping left out of both. Every row is listed: a cut by time would make the
// list depend on the machine's speed.
std::string step_profile(double wall, int64_t steps) {
  wall -= op_profile_bookkeeping_seconds();
  std::vector<OpTime> rows = op_profile();
  std::sort(rows.begin(), rows.end(), [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
  double in_ops = 0;
  for (const OpTime& r : rows) in_ops += r.seconds;
  const double per = 1e3 / double(std::max<int64_t>(1, steps));
  std::string text = fmt::format("    {} steps, {:.3f} ms a step: ops {:.3f}, outside them {:.3f}\n", steps,
                                 wall * per, in_ops * per, (wall - in_ops) * per);
  for (const OpTime& r : rows) {
    text += fmt::format("    {:>16} {:<34} {:>7.1f} calls {:>8.3f} ms{}\n", r.op, r.label,
                        double(r.calls) / double(steps), r.seconds * per,
                        r.flops > 0 ? fmt::format(" {:>7.1f} GFLOP/s", r.flops / r.seconds / 1e9) : "");
  }
  return text;
}

Level run_level(const CausalLM& model, const serve::EngineOptions& eo, int64_t c, const ServeBenchOptions& o,
                int64_t round) {
  serve::Engine engine(model, eo);
  const int64_t V = model.config().vocab_size;
  std::vector<std::vector<Clock::time_point>> times(static_cast<size_t>(c));
  serve::RequestOptions ro;
  ro.sampling.temperature = o.temperature;
  ro.sampling.top_p = o.top_p;
  ro.max_tokens = o.new_tokens;
  ro.ignore_eos = true;
  const bool profiled = o.profile && round == 1;
  if (profiled) reset_op_profile(), set_op_profiling(true);
  const Clock::time_point start = Clock::now();
  for (int64_t r = 0; r < c; ++r) {
    std::vector<int64_t> prompt;
    for (int64_t t = 0; t < o.prompt; ++t) prompt.push_back((r * 7919 + t * 31 + round * 131 + 1) % V);
    serve::RequestCallbacks cb;
    cb.on_token = [&times, r](const serve::TokenEvent&) {
      times[size_t(r)].push_back(Clock::now());
      return true;
    };
    engine.submit(prompt, ro, cb);
  }
  while (engine.step()) {
  }
  Level l;
  l.concurrency = c;
  l.wall = seconds(start, Clock::now());
  if (profiled) {
    set_op_profiling(false);
    l.profile = step_profile(l.wall, engine.stats().steps);
  }
  for (const auto& t : times) {
    l.tokens += int64_t(t.size());
    l.first_token.push_back(seconds(start, t.front()));
    for (size_t i = 1; i < t.size(); ++i) l.gaps.push_back(seconds(t[i - 1], t[i]));
  }
  if (c == 1 && times[0].size() > 1)
    l.decode_rate = double(times[0].size() - 1) / seconds(times[0].front(), times[0].back());
  return l;
}

}  // namespace

int run_serve_bench(const ServeBenchOptions& o) {
  DEW_REQUIRE(o.precision == "f32" || o.precision == "bf16",
              "[bench serve] --precision {}; expected f32 or bf16", o.precision);
  DEW_REQUIRE(o.prompt >= 1 && o.new_tokens >= 2 && !o.concurrency.empty(),
              "[bench serve] --prompt {}, --new-tokens {}; expected at least 1 and 2", o.prompt,
              o.new_tokens);
  DEW_REQUIRE(o.temperature >= 0 && o.top_p > 0 && o.top_p <= 1,
              "[bench serve] --temperature {}, --top-p {}; expected a temperature >= 0 and 0 < top-p <= 1",
              o.temperature, o.top_p);
  const ModelConfig config = parse_model_config(bench_model_json(o.model, "serve"), o.model);
  const DType dtype = parse_dtype(o.precision);
  CausalLM model = CausalLM::init(config, dtype, 1);
  model.pack_projections();  // as dew serve runs it
  int64_t weight_bytes = 0;
  for (const auto& [name, t] : model.parameters()) weight_bytes += t.numel() * int64_t(dtype_size(t.dtype()));
  const double triad = triad_gb_per_s(), fma_peak = fma_peak_gflop_per_s();
  // NOTE [batching's ceiling]: c requests' step takes at least the weights' read at the triad and c tokens'
  // FLOPs at the FMA peak, one request's at least the read, so batching gains at most min(c, weight bytes
  // x peak / (triad x FLOPs a token)) here: a token's FLOPs are 2 a parameter and attention's 4 L H D a
  // key, over the mean context (prompt + half the new tokens).
  const ModelConfig& mc = model.config();
  const double token_flops = 2.0 * double(model.parameter_count()) +
                             4.0 * double(mc.num_hidden_layers * mc.num_attention_heads * mc.head_dim) *
                                 (double(o.prompt) + double(o.new_tokens) / 2);
  const double ceiling = double(weight_bytes) * fma_peak / (triad * token_flops);
  const int64_t most = *std::max_element(o.concurrency.begin(), o.concurrency.end());
  serve::EngineOptions eo;
  eo.kv_dtype = dtype;
  eo.kv_blocks = most * ((o.prompt + o.new_tokens + eo.block_size - 1) / eo.block_size) + 1;
  eo.max_running = std::max<int64_t>(most, 1);
  eo.batch_invariant = o.batch_invariant;
  fmt::print(
      "serve: {} ({:.1f} M parameters, {}{}), prompt {}, {} new tokens each, {}, all requests at once; "
      "step budget {} tokens; triad {:.1f} GB/s, FMA peak {:.0f} GFLOP/s\n",
      o.model, double(model.parameter_count()) / 1e6, o.precision,
      o.batch_invariant ? ", batch-invariant" : "", o.prompt, o.new_tokens,
      o.temperature == 0 ? std::string("greedy")
                         : fmt::format("temperature {} top-p {}", o.temperature, o.top_p),
      eo.max_step_tokens, triad, fma_peak);
  fmt::print("{:>11} {:>14} {:>9} {:>22} {:>22}\n", "concurrent", "output tok/s", "gain",
             "first token ms p50/p99", "inter-token ms p50/p99");
  nlohmann::json levels = nlohmann::json::array();
  double single = 0, single_decode = 0;
  for (int64_t c : o.concurrency) {
    run_level(model, eo, c, o, 0);  // warm-up
    const Level l = run_level(model, eo, c, o, 1);
    const double rate = double(l.tokens) / l.wall;
    if (c == 1) single = rate, single_decode = l.decode_rate;
    const double gain = single > 0 ? rate / single : 0;
    fmt::print("{:>11} {:>14.1f} {:>8.2f}x {:>10.1f} / {:>9.1f} {:>10.2f} / {:>9.2f}\n", c, rate, gain,
               1e3 * percentile(l.first_token, 0.5), 1e3 * percentile(l.first_token, 0.99),
               1e3 * percentile(l.gaps, 0.5), 1e3 * percentile(l.gaps, 0.99));
    fmt::print("{}", l.profile);
    levels.push_back({{"concurrency", c},
                      {"output_tokens_per_s", rate},
                      {"gain_over_one", gain},
                      {"gain_ceiling", std::min(double(c), ceiling)},
                      {"ttft_p50_s", percentile(l.first_token, 0.5)},
                      {"ttft_p99_s", percentile(l.first_token, 0.99)},
                      {"itl_p50_s", percentile(l.gaps, 0.5)},
                      {"itl_p99_s", percentile(l.gaps, 0.99)}});
  }
  const double weights_gb_s = double(weight_bytes) * single_decode / 1e9;
  if (single_decode > 0)
    fmt::print("one request's decode: {:.1f} tokens/s, weights {:.2f} GB/s = {:.0f}% of triad\n",
               single_decode, weights_gb_s, 100 * weights_gb_s / triad);
  fmt::print(
      "batching's ceiling here: min(concurrency, {:.1f}), the weights at the triad against the tokens' "
      "FLOPs at the FMA peak\n",
      ceiling);
  nlohmann::json line = {{"batch_invariant", o.batch_invariant},
                         {"bench", "serve"},
                         {"model", o.model},
                         {"precision", o.precision},
                         {"prompt", o.prompt},
                         {"temperature", o.temperature},
                         {"top_p", o.top_p},
                         {"new_tokens", o.new_tokens},
                         {"triad_gb_s", triad},
                         {"fma_peak_gflop_s", fma_peak},
                         {"weight_bytes", weight_bytes},
                         {"single_decode_tokens_per_s", single_decode},
                         {"single_decode_of_triad", weights_gb_s / triad},
                         {"levels", levels}};
  fmt::print("{}\n", line.dump());
  return 0;
}

}  // namespace dew::bench
