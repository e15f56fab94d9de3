// The Trainer (train.h): resume or initialize, then optimizer steps with logging, checkpoints and a
// stop flag. Everything a step depends on — weights, optimizer state, counters, the data position —
// is in the checkpoint, so a resumed run repeats the uninterrupted one bit for bit.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include "core/strided.h"
#include "io/files.h"
#include "io/json.h"
#include "train/environment.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <sstream>

namespace dew::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::unique_ptr<Optimizer> make_optimizer(const TrainerConfig& c, const std::vector<Param>& params) {
  if (c.optimizer == "adamw") return make_adamw(params, c.adamw);
  if (c.optimizer == "sgd") return make_sgd(params, c.sgd);
  if (c.optimizer == "lion") return make_lion(params, c.lion);
  if (c.optimizer == "muon") return make_muon(params, c.muon);
  fail("[train] optimizer \"{}\"; expected adamw, sgd, lion or muon", c.optimizer);
}

// Keeps the metrics lines up to `step`: lines a crashed run logged after its last checkpoint are
// logged again by the resumed run.
void truncate_metrics(const fs::path& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("step", int64_t(0)) <= step) kept += line + "\n";
  }
  write_text_file(path.string(), kept);
}

// Copies `from`'s weights into `into`: the same names, shapes, f32 — else it is another model.
void copy_weights(CausalLM& from, CausalLM& into, const std::string& source) {
  for (auto& [name, p] : into.parameters()) {
    const auto it = from.parameters().find(name);
    DEW_REQUIRE(
        it != from.parameters().end() && it->second.shape() == p.shape() && it->second.dtype() == DType::f32,
        "[train] {} holds no f32 {} of this model's shape {}; it is a checkpoint of another model", source,
        name, p.shape());
    dew::detail::copy_strided(it->second.to(p.device()), p);  // into the weights wherever they are
  }
}

nlohmann::json route_list() {
  nlohmann::json out = nlohmann::json::array();
  for (const RouteRecord& r : routes())
    out.push_back(
        {{"op", r.op}, {"implementation", r.implementation}, {"case", r.case_label}, {"count", r.count}});
  return out;
}

}  // namespace

// NOTE [training FLOPs]
// A token costs 2 FLOPs per weight it multiplies in the forward pass and 4 in the backward (the
// input and the weight gradients): 6 N, N counting every matrix (the head once, tied or not) but the
// embedding lookups, which multiply nothing. Attention adds its two products, QKᵀ and PV, each
// 2·D per head per key: 4 L H D T forward and twice that backward, 12 L H D T at sequence length T
// (PaLM's appendix B; causal masking is not discounted, as there).
double training_flops_per_token(const CausalLM& model, int64_t T) {
  const ModelConfig& c = model.config();
  double n = 0;
  for (const auto& [name, p] : model.parameters()) {
    if (p.dim() >= 2 && !is_embedding_table(name)) n += double(p.numel());
  }
  if (c.tie_word_embeddings) n += double(c.vocab_size) * double(c.hidden_size);  // the head is the table
  const double head_dim = double(c.head_dim ? c.head_dim : c.hidden_size / c.num_attention_heads);
  return 6 * n + 12 * double(c.num_hidden_layers) * double(c.num_attention_heads) * head_dim * double(T);
}

Trainer::Trainer(TrainerConfig config, data::Chain chain, std::string run_dir,
                 std::function<data::Chain()> eval_chain)
    : config_(std::move(config)),
      chain_(std::move(chain)),
      run_dir_(std::move(run_dir)),
      eval_chain_(std::move(eval_chain)) {
  DEW_REQUIRE(config_.eval_every == 0 || (eval_chain_ && config_.eval_batches >= 1),
              "[train] eval_every {} needs a held-out chain ([eval.data]) and eval_batches >= 1",
              config_.eval_every);
  DEW_REQUIRE(config_.sample_every == 0 || (!config_.sample_prompts.empty() && config_.sample_tokens >= 1),
              "[train] sample_every {} needs prompts and sample_tokens >= 1", config_.sample_every);
  DEW_REQUIRE(
      config_.steps >= 1 && config_.accumulation >= 1 && config_.log_every >= 1 &&
          config_.checkpoint_every >= 0 && config_.grad_clip >= 0 && config_.max_skips >= 1,
      "[train] steps {}, accumulation {}, log_every {}, checkpoint_every {}, grad_clip {}, max_skips {}; "
      "expected steps, accumulation, log_every, max_skips >= 1 and the others >= 0",
      config_.steps, config_.accumulation, config_.log_every, config_.checkpoint_every, config_.grad_clip,
      config_.max_skips);
  if (config_.schedule.total_steps <= 1) config_.schedule.total_steps = config_.steps;
  config_.schedule.at(0);  // validates the schedule before any work
}

Trainer::Outcome Trainer::run(const std::atomic<bool>* stop) {
  const auto say = [&](const std::string& line) {
    if (on_log) on_log(line);
  };
  fs::create_directories(run_dir_);
  CausalLM model =
      CausalLM::init(parse_model_config(config_.model_json, "model config"), DType::f32, config_.seed);
  for (auto& [name, p] : model.parameters()) p.requires_grad_();
  // The master weights, the optimizer's state and every step live on the configured device.
  if (config_.device.kind != Device::Kind::cpu) model = model.to(config_.device);
  const std::vector<Param> params = default_groups(model.parameters(), config_.weight_decay);
  std::unique_ptr<Optimizer> optimizer = make_optimizer(config_, params);
  int64_t step = 0, tokens = 0, skipped = 0;

  const CheckpointScan scan = find_checkpoints(run_dir_);
  for (const std::string& why : scan.ignored) say("ignored " + why);
  if (!scan.latest.empty()) {
    LoadedCheckpoint loaded = load_checkpoint(scan.latest);
    copy_weights(loaded.model, model, scan.latest);
    optimizer->load_state(loaded.optimizer_state, loaded.optimizer_steps);
    const nlohmann::json state = parse_json(loaded.trainer_state, scan.latest + "/trainer.json");
    DEW_REQUIRE(state.value("init_from", std::string()) == config_.init_from,
                "[train] {} already holds a run (checkpoint {}){}; a new run from {} needs a run directory "
                "of its own",
                run_dir_, scan.latest,
                state.value("init_from", std::string()).empty()
                    ? std::string()
                    : " begun from " + state.value("init_from", std::string()),
                config_.init_from.empty() ? "a fresh initialization" : config_.init_from);
    const uint64_t seed = state.at("seed").get<uint64_t>();
    DEW_REQUIRE(
        seed == config_.seed,
        "[train] {} was trained with seed {} and the config now says {}; resume with the same seed, or "
        "train in a new run directory",
        scan.latest, seed, config_.seed);
    step = state.at("step").get<int64_t>();
    tokens = state.at("tokens").get<int64_t>();
    skipped = state.at("skipped").get<int64_t>();
    chain_.resume(state.at("data").get<std::string>());
    say(fmt::format("resumed from {} at step {}", scan.latest, step));
  } else if (!config_.init_from.empty()) {
    const std::string from = model_directory(config_.init_from);
    CausalLM initial = CausalLM::load(from, DType::f32);
    copy_weights(initial, model, from);
    say("initialized from the weights of " + from);
  }
  reset_routes();
  const auto run_description = [&] {
    nlohmann::json run = environment_description();
    run["config"] = nlohmann::json::parse(describe_config(config_));
    run["source"] =
        config_.source_json.empty() ? nlohmann::json() : nlohmann::json::parse(config_.source_json);
    run["data"] = nlohmann::json::parse(chain_.description());
    run["routes"] = route_list();
    return run.dump(2);
  };
  write_text_file((fs::path(run_dir_) / "run.json").string(), run_description());
  const fs::path metrics_path = fs::path(run_dir_) / "metrics.jsonl";
  truncate_metrics(metrics_path, step);
  std::ofstream metrics(metrics_path, std::ios::app);

  const auto checkpoint = [&] {
    const nlohmann::json state = {{"step", step},
                                  {"tokens", tokens},
                                  {"skipped", skipped},
                                  {"seed", config_.seed},
                                  {"init_from", config_.init_from},
                                  {"data", chain_.position()}};
    const std::string run = run_description();
    write_text_file((fs::path(run_dir_) / "run.json").string(), run);
    return save_checkpoint(run_dir_, step, {&model, optimizer.get(), state.dump(), config_.tokenizer, run},
                           config_.keep);
  };

  Outcome outcome;
  int64_t consecutive_skips = 0;
  double flops_per_token = 0;
  reset_peak_memory();
  // Running out of memory ends the run; a checkpoint is renamed into place only whole, so the last
  // committed one is intact whatever was being allocated.
  std::string last_checkpoint = scan.latest;
  const int64_t first_step = step;
  const auto out_of_memory = [&](const std::string& what) {
    fail(
        "[train] out of memory at step {} of {} ({}; {:.1f} MiB in use at the peak): fewer tokens per "
        "microbatch (a smaller batch or T, with accumulation for the same update) or a smaller model need "
        "less; {}",
        step + 1, config_.steps, what, double(cpu_memory_stats().peak_bytes) / (1 << 20),
        last_checkpoint.empty() ? "no checkpoint had been written"
                                : "the last checkpoint " + last_checkpoint + " is intact");
  };
  try {
    while (step < config_.steps) {
      const auto start = Clock::now();
      const double lr = config_.schedule.at(step);
      const StepResult result = train_step(model, params, *optimizer,
                                           {.accumulation = config_.accumulation,
                                            .lr = lr,
                                            .grad_clip = config_.grad_clip,
                                            .z_loss = config_.z_loss,
                                            .compute = config_.compute},
                                           [&] { return chain_.next_batch(); });
      DEW_REQUIRE(result.complete,
                  "[train] the data ended at step {} of {}; give its source more epochs (or 0, to repeat)",
                  step, config_.steps);
      const double loss = result.loss, norm = result.grad_norm, data_wait = result.data_wait_s;
      const int64_t step_tokens = result.tokens;
      if (flops_per_token == 0) flops_per_token = training_flops_per_token(model, result.T);
      if (result.applied) {
        consecutive_skips = 0;
      } else {
        ++skipped;
        say(fmt::format(
            "step {}: the loss ({}) or the gradient norm ({}) is not finite; the update is skipped", step + 1,
            loss, norm));
        DEW_REQUIRE(++consecutive_skips < config_.max_skips,
                    "[train] stopped at step {}: {} consecutive steps had a non-finite loss or gradient norm "
                    "(lower the learning rate, or check the data); the last checkpoint is intact",
                    step + 1, consecutive_skips);
      }
      ++step;
      tokens += step_tokens;
      outcome.last_loss = loss;
      if (on_step) on_step(step, loss);
      if (step == first_step + 1)
        write_text_file((fs::path(run_dir_) / "run.json").string(), run_description());  // routes now known
      const double step_s = seconds_since(start), rate = double(step_tokens) / step_s;
      const double mfu = config_.peak_flops > 0 ? rate * flops_per_token / config_.peak_flops : 0;
      if (step % config_.log_every == 0 || step == config_.steps) {
        nlohmann::json line = {
            {"step", step},
            {"tokens", tokens},
            {"loss", loss},
            {"lr", lr},
            {"grad_norm", norm},
            {"tokens_per_s", rate},
            {"mfu", mfu > 0 ? nlohmann::json(mfu) : nlohmann::json()},
            {"step_s", step_s},
            {"data_wait_s", data_wait},
            {"peak_bytes", cpu_memory_stats().peak_bytes},
            {"skipped", skipped},
            {"accuracy", result.targets ? double(result.correct) / double(result.targets) : 0.0},
            {"perplexity", std::exp(loss)}};
        metrics << line.dump() << "\n" << std::flush;
        say(fmt::format("step {}/{}  loss {:.4f}  lr {:.3g}  grad_norm {:.3g}  {:.0f} tokens/s{}", step,
                        config_.steps, loss, lr, norm, rate,
                        mfu > 0 ? fmt::format("  mfu {:.1f}%", 100 * mfu) : ""));
      }
      if (config_.eval_every && step % config_.eval_every == 0) {
        // The first eval_batches of a fresh held-out chain: the same tokens at every evaluation.
        NoGrad no_grad;
        data::Chain held_out = eval_chain_();
        double weighted = 0;
        int64_t targets = 0, correct = 0;
        std::map<int64_t, int64_t> counts;  // of the held-out targets, for their unigram entropy
        for (int64_t b = 0; b < config_.eval_batches; ++b) {
          std::optional<data::Batch> batch = held_out.next_batch();
          if (!batch) break;
          const LmLoss lm = lm_loss(model, *batch);
          weighted += lm.loss.to_f64_vector()[0] * double(lm.targets);
          targets += lm.targets;
          correct += lm.correct;
          const Tensor& y = lm.target_ids;
          for (int64_t i = 0; i < y.numel(); ++i)
            if (y.data<int64_t>()[i] != kIgnoreTarget) ++counts[y.data<int64_t>()[i]];
        }
        double entropy = 0;
        for (const auto& [id, n] : counts)
          entropy -= double(n) / double(targets) * std::log(double(n) / double(targets));
        outcome.eval_loss = targets ? weighted / double(targets) : NAN;
        outcome.unigram_entropy = entropy;
        metrics << nlohmann::json{{"step", step},
                                  {"eval_loss", outcome.eval_loss},
                                  {"eval_targets", targets},
                                  {"eval_accuracy", targets ? double(correct) / double(targets) : 0.0},
                                  {"eval_perplexity", std::exp(outcome.eval_loss)},
                                  {"unigram_entropy", entropy}}
                       .dump()
                << "\n"
                << std::flush;
        say(fmt::format(
            "step {}: eval loss {:.4f} nats over {} held-out targets (their unigram entropy {:.4f})", step,
            outcome.eval_loss, targets, entropy));
      }
      if (config_.sample_every && step % config_.sample_every == 0) {
        const Tokenizer* tokenizer = chain_.tokenizer();
        DEW_REQUIRE(tokenizer,
                    "[train] samples need the data chain's tokenizer; the chain has no tokenize stage");
        NoGrad no_grad;
        std::ofstream samples(fs::path(run_dir_) / "samples.jsonl", std::ios::app);
        for (const std::string& prompt : config_.sample_prompts) {
          GenerationOptions options{.max_new_tokens = config_.sample_tokens};
          if (tokenizer->eos_id()) options.eos_ids = {*tokenizer->eos_id()};
          const std::vector<int64_t> ids = tokenizer->encode(prompt, {.add_special_tokens = true});
          // A model's vocabulary may be padded past the tokenizer's; ids it has no text for are left out.
          std::vector<int64_t> produced = generate(model, {ids}, options)[0];
          std::erase_if(produced, [&](int64_t id) { return id >= tokenizer->vocab_size(); });
          const std::string text = tokenizer->decode(produced, {.skip_special_tokens = true});
          samples << nlohmann::json{{"step", step}, {"prompt", prompt}, {"text", text}}.dump(
                         -1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "\n";
          say(fmt::format("step {}: sample {} → {}", step, prompt, text));
        }
      }
      const bool stopping = stop && stop->load();
      if (stopping || step == config_.steps ||
          (config_.checkpoint_every && step % config_.checkpoint_every == 0)) {
        outcome.checkpoint = last_checkpoint = checkpoint();
        say("checkpoint " + outcome.checkpoint);
      }
      if (stopping) {
        outcome.stopped = true;
        break;
      }
    }
  } catch (const OutOfMemory& e) {
    out_of_memory(e.what());
  } catch (const std::bad_alloc&) {
    out_of_memory("the system refused an allocation");
  }
  outcome.step = step;
  return outcome;
}

}  // namespace dew::train
