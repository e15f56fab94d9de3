// The Trainer (train.h): resume or initialize, then optimizer steps with logging, checkpoints and a
// stop flag. Everything a step depends on — weights, optimizer state, counters, the data position —
// is in the checkpoint, so a resumed run repeats the uninterrupted one bit for bit.
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/train.h>

#include "io/file_lock.h"
#include "io/files.h"
#include "io/json.h"
#include "train/clock_time.h"
#include "train/environment.h"
#include "train/trainer_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <sstream>

namespace dew::train {
namespace {

namespace fs = std::filesystem;

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
void copy_weights(TrainedModel& from, TrainedModel& into, const std::string& source) {
  for (auto& [name, p] : into.parameters()) {
    const auto it = from.parameters().find(name);
    DEW_REQUIRE(
        it != from.parameters().end() && it->second.shape() == p.shape() && it->second.dtype() == DType::f32,
        "[train] {} holds no f32 {} of this model's shape {}; it is a checkpoint of another model", source,
        name, p.shape());
    if (!p.storage_released()) p.copy_from(it->second);  // into the weights wherever they are
  }
}

// "steps 360 -> 400, schedule.total_steps 360 -> 400": what differs between two resolved configs
// (describe_config), leaf by leaf.
std::string config_changes(const nlohmann::json& before, const nlohmann::json& now) {
  std::vector<std::string> changes;
  const nlohmann::json a = before.flatten(), b = now.flatten();
  for (const auto& [key, value] : b.items()) {
    const auto was = a.find(key);
    if (was == a.end() || *was != value)
      changes.push_back(
          fmt::format("{} {} -> {}", key.substr(1), was == a.end() ? "(none)" : was->dump(), value.dump()));
  }
  for (std::string& c : changes) std::replace(c.begin(), c.end(), '/', '.');
  return fmt::format("{}", fmt::join(changes, ", "));
}

nlohmann::json route_list() {
  nlohmann::json out = nlohmann::json::array();
  for (const RouteRecord& r : routes())
    out.push_back(
        {{"op", r.op}, {"implementation", r.implementation}, {"case", r.case_label}, {"count", r.count}});
  return out;
}

// The routers' imbalance: the worst layer's (most tokens an expert took - the mean) / the mean, the
// MaxVio of DeepSeek's auxiliary-loss-free balancing paper; 0 when every expert takes its share.
double max_violation(const std::vector<std::vector<int64_t>>& expert_tokens) {
  double worst = 0;
  for (const std::vector<int64_t>& layer : expert_tokens) {
    if (layer.empty()) continue;
    double total = 0, most = 0;
    for (const int64_t n : layer) total += double(n), most = std::max(most, double(n));
    const double mean = total / double(layer.size());
    if (mean > 0) worst = std::max(worst, (most - mean) / mean);
  }
  return worst;
}

// A parameter's elements in the whole model: a tensor-parallel slice (CausalLM::tensor_shard) counts
// for the group's.
double whole_elements(const std::string& name, const Tensor& p, int64_t tensor_parallel) {
  return double(p.numel()) * double(tensor_parallel_dim(name) >= 0 ? tensor_parallel : 1);
}

}  // namespace

// NOTE [training FLOPs]
// A token costs 2 FLOPs per weight it multiplies in the forward pass and 4 in the backward (the
// input and the weight gradients): 6 N, N counting every matrix (the head once, tied or not) but the
// embedding lookups, which multiply nothing. Attention adds its two products, QKᵀ and PV, each
// 2·D per head per key: 4 L H D T forward and twice that backward, 12 L H D T at sequence length T
// (PaLM's appendix B; causal masking is not discounted, as there). A token meets K of an experts
// layer's E experts, so an expert's matrices count K/E of their size (the router counts whole). A
// recurrent layer's state (K x V per head) stands where attention's T keys do: Mamba-2's SSD reads and
// writes it twice a token (4 H K V forward, 12 with backward), a Gated DeltaNet's three times (S^T k
// besides, 18 H K V).
double training_flops_per_token(const CausalLM& model, int64_t T, int64_t tensor_parallel) {
  const ModelConfig& c = model.config();
  double n = 0;
  for (const auto& [name, p] : model.parameters()) {
    const double share = name.find(".experts.") != std::string::npos
                             ? double(c.moe.experts_per_token) / double(c.moe.num_experts)
                             : 1.0;
    if (p.dim() >= 2 && !is_embedding_table(name)) n += share * whole_elements(name, p, tensor_parallel);
  }
  if (c.tie_word_embeddings) n += double(c.vocab_size) * double(c.hidden_size);  // the head is the table
  if (c.ssm.state_size > 0)
    return 6 * n +
           12 * double(c.num_hidden_layers) * double(c.ssm.num_heads * c.ssm.head_dim * c.ssm.state_size);
  const double head_dim = double(c.head_dim ? c.head_dim : c.hidden_size / c.num_attention_heads);
  const GatedDeltaNetConfig& g = c.delta_net;
  double mixers = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    mixers += g.replaces_attention(i) ? 18 * double(g.num_value_heads * g.key_head_dim * g.value_head_dim)
                                      : 12 * double(c.num_attention_heads) * head_dim * double(T);
  return 6 * n + mixers;
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
  const bool image_model = is_image_model_config(config_.model_json, "model config");
  DEW_REQUIRE(config_.quality_classifier.empty() || config_.sample_every == 0 || (image_model && eval_chain_),
              "[train] a quality classifier ([sample] classifier) measures an image model's samples against "
              "held-out images: it needs an image model (model_type \"dit\" or \"unet\") and [eval.data]");
  DEW_REQUIRE(config_.sample_every == 0 || image_model ||
                  (!config_.sample_prompts.empty() && config_.sample_tokens >= 1),
              "[train] sample_every {} needs prompts and sample_tokens >= 1", config_.sample_every);
  DEW_REQUIRE(
      config_.steps >= 1 && config_.accumulation >= 1 && config_.log_every >= 1 &&
          config_.checkpoint_every >= 0 && config_.grad_clip >= 0 && config_.max_skips >= 1,
      "[train] steps {}, accumulation {}, log_every {}, checkpoint_every {}, grad_clip {}, max_skips {}; "
      "expected steps, accumulation, log_every, max_skips >= 1 and the others >= 0",
      config_.steps, config_.accumulation, config_.log_every, config_.checkpoint_every, config_.grad_clip,
      config_.max_skips);
  if (config_.schedule.total_steps <= 1) config_.schedule.total_steps = config_.steps;
  if (config_.schedule.warmup_steps > config_.schedule.total_steps) {  // a smoke run shorter than the warm-up
    notes_.push_back(fmt::format("the warm-up of {} steps is longer than the run's {}; it is clipped to {}",
                                 config_.schedule.warmup_steps, config_.schedule.total_steps,
                                 config_.schedule.total_steps));
    config_.schedule.warmup_steps = config_.schedule.total_steps;
  }
  config_.schedule.at(0);  // validates the schedule before any work
}

Trainer::Outcome Trainer::run(const std::atomic<bool>* stop) {
  Run run;
  // Data parallel (docs/parallel.md): every rank trains the same replica on its row groups of each
  // batch; rank 0 alone holds the run directory's lock, writes it and reports.
  run.world = parallel::launched_world();
  run.data_parallel.world = run.world.get();
  run.data_parallel.bucket_elements = std::max(int64_t(1), int64_t(config_.bucket_mib * double(1 << 20) / 4));
  run.outcome.rank = run.world->rank(), run.outcome.ranks = run.world->size();
  reports_ = run.leader();
  DEW_REQUIRE(run.world->size() == 1 || config_.device.kind == Device::Kind::cpu,
              "[train] {} ranks on {}: data parallel runs on CPUs for now (the Trainer does not use the "
              "NCCL communicator yet); train on the cpu, or in one process",
              run.world->size(), config_.device.str());
  if (run.leader()) {
    fs::create_directories(run_dir_);
    // One trainer per run directory: a second would interleave metrics and checkpoints with the first.
    const std::string lock_path = (fs::path(run_dir_) / "train.lock").string();
    std::string holder;
    run.lock = FileLock::try_acquire(lock_path, holder);
    DEW_REQUIRE(run.lock,
                "[train] {} is in use by process {} (it holds {}); wait for that run to end or stop it, "
                "or give another run directory",
                run_dir_, holder, lock_path);
    for (const std::string& line : clear_unfinished_checkpoints(run_dir_)) say(line);
  }
  run.world->set_timeout(config_.timeout_s);
  if (config_.tensor_parallel > 1) split_for_tensor_parallelism(run);
  if (run.world->size() > 1 && config_.peak_flops > 0) {
    // Each rank measured its share of the machines while the others measured theirs: MFU is the whole
    // job's FLOP/s against their sum.
    Tensor peak = Tensor::from_values({config_.peak_flops}, {1}, DType::f64);
    run.world->all_reduce_sum(peak);
    config_.peak_flops = peak.to_f64_vector()[0];
  }
  run.world->barrier();  // the other ranks read the run directory once rank 0 has cleared it
  resume_or_initialize(run);
  require_same_run_on_every_rank(run);
  for (const std::string& note : notes_) say(note);
  if (run.step >= config_.steps) {  // nothing left to do: say so, change nothing
    run.outcome.finished_already = true;
    run.outcome.checkpoint = run.last_checkpoint;
    run.outcome.step = run.step;
    return run.outcome;
  }
  reset_routes();
  if (run.leader()) {
    write_text_file((fs::path(run_dir_) / "run.json").string(), run_description());
    const fs::path metrics_path = fs::path(run_dir_) / "metrics.jsonl";
    truncate_metrics(metrics_path, run.step);
    run.metrics.open(metrics_path, std::ios::app);
  }
  reset_peak_memory();
  run.started = Clock::now();
  // Running out of memory ends the run; a checkpoint is renamed into place only whole, so the last
  // committed one is intact whatever was being allocated.
  const auto out_of_memory = [&](const std::string& what) {
    fail(
        "[train] out of memory at step {} of {} ({}; {:.1f} MiB in use at the peak): fewer tokens per "
        "microbatch (a smaller batch or T, with accumulation for the same update) or a smaller model need "
        "less; {}",
        run.step + 1, config_.steps, what, double(cpu_memory_stats().peak_bytes) / (1 << 20),
        run.last_checkpoint.empty() ? "no checkpoint had been written"
                                    : "the last checkpoint " + run.last_checkpoint + " is intact");
  };
  try {
    start_heartbeat(run);
    while (run.step < config_.steps) {
      run.reported_step = run.step;
      step(run);
      const bool evaluating = config_.eval_every && run.step % config_.eval_every == 0;
      const bool sampling = config_.sample_every && run.step % config_.sample_every == 0;
      // Rank 0 evaluates and samples while the others wait; with sharded parameters (gathered layer by
      // layer as in a step) or a split model every rank takes part, and rank 0 writes.
      const bool everyone = run.gathers || run.tensor;
      if ((run.leader() || everyone) && evaluating) evaluate(run);
      if ((run.leader() || everyone) && sampling) sample(run);
      if ((evaluating || sampling) && !everyone) wait_for_leader(run);
      const bool stopping = stop_requested(run, stop);
      if (stopping || run.step == config_.steps ||
          (config_.checkpoint_every && run.step % config_.checkpoint_every == 0)) {
        run.outcome.checkpoint = run.last_checkpoint = checkpoint(run);
        say("checkpoint " + run.outcome.checkpoint);
      }
      if (stopping) {
        run.outcome.stopped = true;
        break;
      }
    }
  } catch (const OutOfMemory& e) {
    out_of_memory(e.what());
  } catch (const parallel::CollectiveTimeout& e) {
    throw parallel::CollectiveTimeout(fmt::format(
        "{}; {}; {}; run it again to resume", e.what(), ranks_behind(run),
        run.last_checkpoint.empty() ? "no checkpoint had been written"
                                    : "the last checkpoint " + run.last_checkpoint + " is intact"));
  } catch (const std::bad_alloc&) {
    out_of_memory("the system refused an allocation");
  }
  run.outcome.step = run.step;
  if (profile && run.leader()) {
    run.outcome.profile =
        run.profiler.result(run.model.is_image() ? 0 : run.model.language().config().vocab_size);
    write_text_file((fs::path(run_dir_) / "profile.json").string(), step_profile_json(*run.outcome.profile));
  }
  return run.outcome;
}

void Trainer::say(const std::string& line) const {
  if (on_log && reports_) on_log(line);
}

// ZeRO-3: the parameters this rank owns (owners() over the model's layout, made without values), and
// the buffers, which every rank holds.
HeldParameters Trainer::own_parameters(const parallel::Communicator& replicas) const {
  TrainedModel layout =
      TrainedModel::init(config_.model_json, config_.seed, [](const std::string&) { return false; });
  const std::vector<Param> all = default_groups(layout.parameters(), config_.weight_decay);
  const std::vector<int> owner = owners(all, replicas.size());
  std::set<std::string> others;
  for (size_t i = 0; i < all.size(); ++i)
    if (owner[i] != replicas.rank()) others.insert(all[i].name);
  return [others](const std::string& name) { return !others.contains(name); };
}

// NOTE [2-D grid]: with [parallel] tensor = N, ranks N g .. N g + N - 1 split each model among them
// (Megatron's tensor-parallel group g, CausalLM::tensor_shard) and the ranks with the same place in
// their groups are data-parallel replicas of each other (row groups, reductions, sharding). Every
// rank of a tensor group reads the same rows; rank 0 writes, gathering its group's slices whole.
void Trainer::split_for_tensor_parallelism(Run& run) {
  const int64_t N = config_.tensor_parallel, P = run.world->size();
  DEW_REQUIRE(P % N == 0,
              "[train] {} ranks do not form groups of [parallel] tensor = {}; run a multiple of {} ranks", P,
              N, N);
  DEW_REQUIRE(
      !is_image_model_config(config_.model_json, "model config"),
      "[train] tensor parallelism splits llama-family language models; train an image model with data "
      "parallelism ([parallel] tensor = 1)");
  DEW_REQUIRE(
      config_.optimizer != "muon",
      "[train] Muon orthogonalizes whole matrices, which tensor parallelism splits; use AdamW, Lion or SGD "
      "with [parallel] tensor = {}, or tensor = 1",
      N);
  DEW_REQUIRE(config_.shard == "none" && config_.ema_decay == 0,
              "[train] [parallel] tensor = {} with shard \"{}\" and ema_decay {}: neither sharding nor the "
              "weights' average is combined with tensor parallelism yet; expected shard = \"none\" and "
              "ema_decay = 0",
              N, config_.shard, config_.ema_decay);
  const int rank = run.world->rank();
  run.tensor_group = run.world->split(int(rank / N), rank);
  run.replicas = run.world->split(int(rank % N), rank);
  run.tensor = std::make_unique<GroupTensorParallel>(*run.tensor_group);
  run.data_parallel.world = run.replicas.get();
}

// Every rank must resume the same run at the same step with the same config, or their collectives
// would pair different steps: compared by a hash of both, naming the first rank that differs.
void Trainer::require_same_run_on_every_rank(Run& run) const {
  if (run.world->size() == 1) return;
  const std::string identity = describe_config(config_) + "@" + std::to_string(run.step);
  const Tensor mine =
      Tensor::from_values({double(std::hash<std::string>{}(identity) >> 11)}, {1}, DType::f64);
  Tensor all = Tensor::empty({run.world->size()}, DType::f64);
  run.world->all_gather(mine, all);
  const std::vector<double> hashes = all.to_f64_vector();
  for (size_t r = 1; r < hashes.size(); ++r)
    DEW_REQUIRE(hashes[r] == hashes[0],
                "[train] rank {} resumed {} at another step or with another config than rank 0 (it is at "
                "step {}); every rank must see the same run directory and config (a shared file system)",
                r, run_dir_, run.step);
}

// NOTE [heartbeats]: a rank of a data-parallel run whose collective timed out names the ranks it
// waited for. Each rank's thread rewrites RUN_DIR/ranks/rank-R.json every second: its process, host,
// step, the time, and how long it has been waiting in a collective. A rank not heard from for a few
// seconds has stopped or died; one heard from but not waiting is stuck in its own work.
constexpr double kHeartbeatSeconds = 1;

void Trainer::start_heartbeat(Run& run) const {
  if (run.world->size() == 1) return;
  const fs::path dir = fs::path(run_dir_) / "ranks";
  fs::create_directories(dir);
  const std::string file = (dir / fmt::format("rank-{}.json", run.world->rank())).string();
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  run.heartbeat = std::jthread([&run, file, host = std::string(host)](std::stop_token stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    while (!stop.stop_requested()) {
      try {
        write_text_file(file, nlohmann::json{{"rank", run.world->rank()},
                                             {"pid", ::getpid()},
                                             {"host", host},
                                             {"step", run.reported_step.load()},
                                             {"time", unix_time()},
                                             {"waiting_s", run.world->seconds_waiting()}}
                                  .dump());
      } catch (const std::exception&) {  // a full disk stops the reports, not the run
      }
      wake.wait_for(lock, stop, std::chrono::duration<double>(kHeartbeatSeconds), [] { return false; });
    }
  });
}

std::string Trainer::ranks_behind(const Run& run) const {
  std::vector<std::string> found;
  for (int r = 0; r < run.world->size(); ++r) {
    if (r == run.world->rank()) continue;
    const fs::path file = fs::path(run_dir_) / "ranks" / fmt::format("rank-{}.json", r);
    const nlohmann::json j = fs::exists(file)
                                 ? nlohmann::json::parse(read_text_file(file.string()), nullptr, false)
                                 : nlohmann::json();
    if (!j.is_object()) {
      found.push_back(fmt::format("rank {} never reported", r));
      continue;
    }
    const std::string who = fmt::format("rank {} (process {} on {}, at step {})", r, j.value("pid", 0),
                                        j.value("host", std::string("?")), j.value("step", int64_t(0)) + 1);
    const double silent = unix_time() - j.value("time", 0.0);
    if (silent > 3 * kHeartbeatSeconds)
      found.push_back(
          fmt::format("{} has not been heard from for {:.0f} s: it stopped or died", who, silent));
    else if (j.value("waiting_s", 0.0) < kHeartbeatSeconds)
      found.push_back(fmt::format("{} is alive but not waiting for the others: stuck in its own work", who));
  }
  return found.empty() ? std::string("every other rank was waiting too")
                       : fmt::format("{}", fmt::join(found, "; "));
}

// Rank 0 alone evaluates and samples, for as long as that takes (minutes, with an image model's
// classifier): the others wait for it without the collective timeout, which would otherwise end the
// run. A rank 0 that dies meanwhile ends the job through mpirun; one that hangs here is not detected.
void Trainer::wait_for_leader(Run& run) const {
  if (run.world->size() == 1) return;
  run.world->set_timeout(0);
  run.world->barrier();
  run.world->set_timeout(config_.timeout_s);
}

// The stop flag as the ranks agree on it: a signal one rank has seen stops every rank after the same
// step (mpirun forwards SIGINT and SIGTERM to each, but not at the same instant).
bool Trainer::stop_requested(Run& run, const std::atomic<bool>* stop) const {
  const bool here = stop && stop->load();
  if (run.world->size() == 1) return here;
  Tensor flag = Tensor::from_values({here ? 1.0 : 0.0}, {1}, DType::f64);
  run.world->all_reduce_sum(flag);
  return flag.to_f64_vector()[0] > 0;
}

void Trainer::resume_or_initialize(Run& run) {
  parallel::Communicator& replicas = *run.data_parallel.world;
  const bool zero3 = config_.shard == "full" && replicas.size() > 1;
  const HeldParameters held = zero3 ? own_parameters(replicas) : HeldParameters();
  run.model = TrainedModel::init(config_.model_json, config_.seed, held);
  // The weights (a checkpoint is whole under any parallelism; ZeRO-3 reads its own alone), then this
  // rank's share under tensor parallelism.
  const CheckpointScan scan = find_checkpoints(run_dir_);  // nothing unfinished left: run() cleared it
  std::optional<LoadedCheckpoint> loaded;
  if (!scan.latest.empty()) {
    loaded = load_checkpoint(scan.latest, held);
    copy_weights(loaded->model, run.model, scan.latest);
    loaded->model = TrainedModel();  // its copy of the weights freed
  } else if (!config_.init_from.empty()) {
    const std::string from = model_directory(config_.init_from);
    TrainedModel initial = TrainedModel::load(from, held);
    copy_weights(initial, run.model, from);
    say("initialized from the weights of " + from);
  }
  if (run.tensor) run.model = TrainedModel(run.model.language().tensor_shard(*run.tensor));
  for (auto& [name, p] : run.model.parameters())
    if (!is_buffer(name)) p.requires_grad_();
  // The master weights, the optimizer's state and every step live on the configured device.
  if (config_.device.kind != Device::Kind::cpu) run.model = run.model.to(config_.device);
  run.params = default_groups(run.model.parameters(), config_.weight_decay);
  for (const Param& p : run.params)
    run.tensor_split.push_back(run.tensor && tensor_parallel_dim(p.name) >= 0);
  // ZeRO-1 and 2: this rank's optimizer holds and updates only the parameters it owns (docs/parallel.md).
  std::vector<Param> updated;
  if (config_.shard != "none" && replicas.size() > 1) {
    run.data_parallel.owner = owners(run.params, replicas.size());
    run.data_parallel.gradients_to_owners = config_.shard == "gradients" || config_.shard == "full";
  }
  if (zero3) {  // ZeRO-3: the parameters' bytes sharded too
    DEW_REQUIRE(config_.ema_decay == 0,
                "[train] ema_decay {} with shard = \"full\": the weights' average would need every weight on "
                "every rank; set ema_decay = 0, or shard \"gradients\"",
                config_.ema_decay);
    run.gathers = std::make_unique<ParameterGathers>(run.params, run.data_parallel.owner, replicas);
    run.data_parallel.gathers = run.gathers.get();
    run.model.set_layer_boundaries(run.gathers.get());
  }
  for (size_t i = 0; i < run.params.size(); ++i)
    if (run.data_parallel.owner.empty() || run.data_parallel.owner[i] == replicas.rank())
      updated.push_back(run.params[i]);
  run.optimizer = make_optimizer(config_, updated);

  if (!loaded) {
    if (config_.ema_decay > 0) run.ema.emplace(run.model.parameters(), config_.ema_decay, config_.ema_warmup);
    return;
  }
  if (config_.ema_decay > 0) {  // the checkpoint's average, or (kept from now on) one that starts here
    run.ema.emplace(run.model.parameters(), config_.ema_decay, config_.ema_warmup);
    if (!loaded->ema_path.empty())
      run.ema->load(loaded->ema_path);
    else
      notes_.push_back(scan.latest + " holds no weight average; it starts from the resumed weights");
  }
  if (!run.data_parallel.owner.empty()) {  // a sharded optimizer: the state of its own parameters
    std::set<std::string> own;
    for (size_t i = 0; i < run.params.size(); ++i)
      if (run.data_parallel.owner[i] == replicas.rank()) own.insert(run.params[i].name);
    std::erase_if(loaded->optimizer_state, [&](const auto& entry) {
      return !own.contains(Optimizer::parameter_of_state(entry.first));
    });
  }
  if (run.tensor)  // the state of this rank's slices
    for (auto& [key, t] : loaded->optimizer_state)
      t = tensor_parallel_part(Optimizer::parameter_of_state(key), t, run.tensor->rank(), run.tensor->size());
  run.optimizer->load_state(loaded->optimizer_state, loaded->optimizer_steps);
  const nlohmann::json state = parse_json(loaded->trainer_state, scan.latest + "/trainer.json");
  DEW_REQUIRE(state.value("init_from", std::string()) == config_.init_from,
              "[train] {} already holds a run (checkpoint {}){}; a new run from {} needs a run directory "
              "of its own",
              run_dir_, scan.latest,
              state.value("init_from", std::string()).empty()
                  ? std::string()
                  : " begun from " + state.value("init_from", std::string()),
              config_.init_from.empty() ? "a fresh initialization" : config_.init_from);
  const uint64_t seed = state.at("seed").get<uint64_t>();
  DEW_REQUIRE(seed == config_.seed,
              "[train] {} was trained with seed {} and the config now says {}; resume with the same seed, or "
              "train in a new run directory",
              scan.latest, seed, config_.seed);
  run.step = run.first_step = state.at("step").get<int64_t>();
  run.tokens = state.at("tokens").get<int64_t>();
  run.skipped = state.at("skipped").get<int64_t>();
  run.last_checkpoint = scan.latest;
  if (run.step >= config_.steps) return;  // finished: the caller says so
  chain_.resume(state.at("data").get<std::string>());
  std::string changed;
  const fs::path previous_run = fs::path(scan.latest) / "run.json";
  if (fs::exists(previous_run)) {
    const nlohmann::json before = parse_json(read_text_file(previous_run.string()), previous_run.string());
    if (before.contains("config"))
      changed = config_changes(before["config"], nlohmann::json::parse(describe_config(config_)));
  }
  say(fmt::format("resumed from {} at step {}{}", scan.latest, run.step,
                  changed.empty() ? std::string() : "; the config changed since: " + changed));
}

void Trainer::step(Run& run) {
  const auto start = Clock::now();
  const double lr = config_.schedule.at(run.step);
  const bool profiled = profile && run.step > run.first_step;  // this process's first step warms up
  if (profiled) run.profiler.begin_step();
  if (run.tensor) run.tensor->take_sent_bytes();  // an evaluation's or a sample's, not the step's
  const StepOptions options{
      .accumulation = config_.accumulation,
      .lr = lr,
      .grad_clip = config_.grad_clip,
      .z_loss = config_.z_loss,
      .compute = config_.compute,
      .row_groups = row_groups(run),
      .data_parallel = run.data_parallel.world->size() > 1 ? &run.data_parallel : nullptr,
      .tensor_group = run.tensor_group.get(),
      .tensor_split = run.tensor_split};
  const auto next_batch = [&] { return chain_.next_batch(); };
  const bool image = run.model.is_image();
  StepResult result = image
                          ? image_train_step(run.model.image(), run.params, *run.optimizer,
                                             {options, config_.diffusion, config_.seed, run.step}, next_batch)
                          : train_step(run.model.language(), run.params, *run.optimizer, options, next_batch);
  if (profiled) run.profiler.end_step();
  if (run.tensor) result.communicated_bytes += run.tensor->take_sent_bytes();  // the split model's sums
  DEW_REQUIRE(
      result.complete || run.tokens > 0,
      "[train] the data chain gave no batch at all: its source holds no records, or fewer tokens than "
      "one batch; expected data (dew data stats CONFIG shows what each stage yields)");
  DEW_REQUIRE(result.complete,
              "[train] the data ended at step {} of {}; give its source more epochs (or 0, to repeat)",
              run.step, config_.steps);
  if (run.flops_per_token == 0)
    run.flops_per_token =
        image ? training_flops_per_image(run.model.image(), config_.diffusion.objective)
              : training_flops_per_token(run.model.language(), result.T, config_.tensor_parallel);
  if (result.applied) {
    run.consecutive_skips = 0;
    if (!image) update_expert_biases(run.model.language(), result.expert_tokens, config_.expert_bias_update);
    if (run.ema) run.ema->update(run.model.parameters());
  } else {
    ++run.skipped;
    say(fmt::format("step {}: the loss ({}) or the gradient norm ({}) is not finite; the update is skipped",
                    run.step + 1, result.loss, result.grad_norm));
    DEW_REQUIRE(++run.consecutive_skips < config_.max_skips,
                "[train] stopped at step {}: {} consecutive steps had a non-finite loss or gradient norm "
                "(lower the learning rate, or check the data); the last checkpoint is intact",
                run.step + 1, run.consecutive_skips);
  }
  ++run.step;
  const int64_t examples = image ? result.images : result.tokens;
  run.tokens += examples;
  run.outcome.last_loss = result.loss;
  const double step_s = seconds_since(start);
  if (run.step == run.first_step + 1) {
    const int64_t groups = row_groups(run);
    double parameters = 0;  // the whole model's, where this rank holds slices of it
    for (const auto& [name, p] : run.model.parameters())
      parameters += whole_elements(name, p, config_.tensor_parallel);
    say(fmt::format(
        "training {}: {:.1f} M parameters, {} {} a step, {}, {} threads on {}{}; steps {} to {}",
        run.model.model_type(), parameters / 1e6, examples, image ? "images" : "tokens",
        config_.compute == DType::bf16 ? "bf16 mixed precision" : dtype_name(config_.compute), num_threads(),
        config_.device.str(),
        run.world->size() == 1 && groups == 1
            ? std::string()
            : fmt::format(" x {} ranks, {} row groups ({} per rank){}", run.world->size(), groups,
                          groups / run.data_parallel.world->size(),
                          run.tensor ? fmt::format(", each model split over {} ranks", run.tensor->size())
                                     : std::string()),
        run.step, config_.steps));
    if (run.leader())  // routes now known
      write_text_file((fs::path(run_dir_) / "run.json").string(), run_description());
  }
  Progress progress;
  progress.step = run.step;
  progress.steps = config_.steps;
  progress.loss = result.loss;
  progress.lr = lr;
  progress.tokens_per_s = double(examples) / step_s;  // images/s for an image model
  progress.elapsed_s = seconds_since(run.started);
  progress.eta_s = progress.elapsed_s / double(run.step - run.first_step) * double(config_.steps - run.step);
  const bool logged = run.step % config_.log_every == 0 || run.step == config_.steps;
  if (logged && run.world->size() > 1) {  // every rank's memory peak, for rank 0's line
    const Tensor mine = Tensor::from_values({double(cpu_memory_stats().peak_bytes)}, {1}, DType::f64);
    Tensor all = Tensor::empty({run.world->size()}, DType::f64);
    run.world->all_gather(mine, all);
    run.peak_bytes_per_rank.clear();
    for (const double bytes : all.to_f64_vector()) run.peak_bytes_per_rank.push_back(int64_t(bytes));
  }
  if (!run.leader()) return;
  if (on_step) on_step(progress);
  if (logged) log(run, result, progress, step_s);
}

int64_t Trainer::row_groups(const Run& run) const {
  return config_.row_groups > 0 ? config_.row_groups : run.data_parallel.world->size();
}

void Trainer::log(Run& run, const StepResult& result, const Progress& progress, double step_s) {
  const double model_flops = progress.tokens_per_s * run.flops_per_token;
  if (config_.peak_flops > 0 && model_flops > config_.peak_flops) {
    // A peak measured in a busy moment reads low and would put MFU over 100%: measure it again, and
    // never take a peak below what the step itself did.
    const double before = config_.peak_flops;
    config_.peak_flops = std::max({before, peak_flops(config_.device, config_.compute), model_flops});
    say(fmt::format(
        "the peak MFU is measured against read {:.1f} GFLOP/s, below this step's {:.1f}; measured "
        "again: {:.1f} GFLOP/s",
        before / 1e9, model_flops / 1e9, config_.peak_flops / 1e9));
  }
  const double mfu = config_.peak_flops > 0 ? model_flops / config_.peak_flops : 0;
  const bool image = run.model.is_image();
  nlohmann::json line = {{"step", run.step},
                         {"time", unix_time()},
                         {image ? "images" : "tokens", run.tokens},
                         {"loss", result.loss},
                         {"lr", progress.lr},
                         {"grad_norm", result.grad_norm},
                         {image ? "images_per_s" : "tokens_per_s", progress.tokens_per_s},
                         {"mfu", mfu > 0 ? nlohmann::json(mfu) : nlohmann::json()},
                         {"step_s", step_s},
                         {"data_wait_s", result.data_wait_s},
                         {"peak_bytes", cpu_memory_stats().peak_bytes},
                         {"skipped", run.skipped},
                         {"accuracy", result.targets ? double(result.correct) / double(result.targets) : 0.0},
                         {"perplexity", std::exp(result.loss - result.router_loss)}};
  if (image) line.erase("accuracy"), line.erase("perplexity");
  // Several ranks: this rank's traffic (gradients, gathers, split sums) and its wait after backward.
  if (run.world->size() > 1) {
    line["communicated_bytes"] = result.communicated_bytes;
    line["communication_wait_s"] = result.communication_wait_s;
    line["peak_bytes_per_rank"] = run.peak_bytes_per_rank;
  }
  if (!result.expert_tokens.empty()) {  // an experts model: its routers' balance (docs/moe.md)
    line["router_loss"] = result.router_loss;
    line["expert_tokens"] = result.expert_tokens;
    line["expert_max_violation"] = max_violation(result.expert_tokens);
  }
  run.metrics << line.dump() << "\n" << std::flush;
  say(fmt::format("step {}/{}  loss {:.4f}  lr {:.3g}  grad_norm {:.3g}  {:.0f} {}/s{}  elapsed {}  ETA {}",
                  run.step, config_.steps, result.loss, progress.lr, result.grad_norm, progress.tokens_per_s,
                  image ? "images" : "tokens", mfu > 0 ? fmt::format("  mfu {:.1f}%", 100 * mfu) : "",
                  clock_time(progress.elapsed_s), clock_time(progress.eta_s)));
}

void Trainer::evaluate(Run& run) {
  if (run.model.is_image()) return evaluate_images(run);
  // The first eval_batches of a fresh held-out chain: the same tokens at every evaluation.
  NoGrad no_grad;
  const GatheredPass pass(run.gathers.get(), run.model.parameters());
  data::Chain held_out = eval_chain_();
  double weighted = 0;
  int64_t targets = 0, correct = 0;
  std::map<int64_t, int64_t> counts;  // of the held-out targets, for their unigram entropy
  for (int64_t b = 0; b < config_.eval_batches; ++b) {
    std::optional<data::Batch> batch = held_out.next_batch();
    if (!batch) break;
    const LmLoss lm = lm_loss(run.model.language(), *batch);
    weighted += lm.loss.to_f64_vector()[0] * double(lm.targets);
    targets += lm.targets;
    correct += lm.correct;
    const int64_t* y = lm.target_ids.data<int64_t>();
    for (int64_t i = 0; i < lm.target_ids.numel(); ++i)
      if (y[i] != kIgnoreTarget) ++counts[y[i]];
  }
  double entropy = 0;
  for (const auto& [id, n] : counts)
    entropy -= double(n) / double(targets) * std::log(double(n) / double(targets));
  run.outcome.eval_loss = targets ? weighted / double(targets) : NAN;
  run.outcome.unigram_entropy = entropy;
  run.metrics << nlohmann::json{{"step", run.step},
                                {"time", unix_time()},
                                {"eval_loss", run.outcome.eval_loss},
                                {"eval_targets", targets},
                                {"eval_accuracy", targets ? double(correct) / double(targets) : 0.0},
                                {"eval_perplexity", std::exp(run.outcome.eval_loss)},
                                {"unigram_entropy", entropy}}
                     .dump()
              << "\n"
              << std::flush;
  say(fmt::format("step {}: eval loss {:.4f} nats over {} held-out targets (their unigram entropy {:.4f})",
                  run.step, run.outcome.eval_loss, targets, entropy));
}

void Trainer::sample(Run& run) {
  if (run.model.is_image()) return sample_images(run);
  const Tokenizer* tokenizer = chain_.tokenizer();
  DEW_REQUIRE(tokenizer, "[train] samples need the data chain's tokenizer; the chain has no tokenize stage");
  NoGrad no_grad;
  const GatheredPass pass(run.gathers.get(), run.model.parameters());
  std::ofstream samples;
  if (run.leader()) samples.open(fs::path(run_dir_) / "samples.jsonl", std::ios::app);
  const TrainedModel averaged =
      run.ema ? run.ema->applied_to(run.model) : TrainedModel();  // drawn from, if kept
  const CausalLM& model = (run.ema ? averaged : run.model).language();
  for (const std::string& prompt : config_.sample_prompts) {
    GenerationOptions options{.max_new_tokens = config_.sample_tokens};
    if (tokenizer->eos_id()) options.eos_ids = {*tokenizer->eos_id()};
    const std::vector<int64_t> ids = tokenizer->encode(prompt, {.add_special_tokens = true});
    // A model's vocabulary may be padded past the tokenizer's; ids it has no text for are left out.
    std::vector<int64_t> produced = generate(model, {ids}, options)[0];
    std::erase_if(produced, [&](int64_t id) { return id >= tokenizer->vocab_size(); });
    const std::string text = tokenizer->decode(produced, {.skip_special_tokens = true});
    samples << nlohmann::json{{"step", run.step}, {"prompt", prompt}, {"text", text}}.dump(
                   -1, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
    say(fmt::format("step {}: sample {} → {}", run.step, prompt, text));
  }
}

std::string Trainer::checkpoint(Run& run) {
  // Rank 0 writes the replicas' one state (and each rank its optimizer shard, when sharded); every rank
  // waits until it is committed, so none runs past a checkpoint that a failure could still lose.
  const bool sharded = !run.data_parallel.owner.empty();
  const std::vector<int>& owner = run.data_parallel.owner;
  std::map<std::string, int> weight_owner;  // ZeRO-3: each rank writes its own weights
  if (run.gathers)
    for (size_t i = 0; i < run.params.size(); ++i) weight_owner[run.params[i].name] = owner[i];
  // Tensor parallelism: the first replicas' group makes its slices whole, and rank 0 writes them.
  std::optional<TrainedModel> whole;
  std::map<std::string, Tensor> whole_state;
  if (run.tensor && run.replicas->rank() == 0) {
    NoGrad no_grad;
    CausalLM model = run.model.language();
    for (auto& [name, t] : model.parameters()) t = gather_whole(*run.tensor_group, name, t);
    for (const auto& [key, t] : run.optimizer->state())
      whole_state[key] = gather_whole(*run.tensor_group, Optimizer::parameter_of_state(key), t);
    whole.emplace(std::move(model));
  }
  if (!run.leader() && !sharded) {
    run.world->barrier();
    return std::string();  // rank 0 names it
  }
  const nlohmann::json state = {
      {"step", run.step},     {"tokens", run.tokens},           {"skipped", run.skipped},
      {"seed", config_.seed}, {"init_from", config_.init_from}, {"data", chain_.position()}};
  const std::string description = run_description();
  if (run.leader()) write_text_file((fs::path(run_dir_) / "run.json").string(), description);
  const std::string committed = save_checkpoint(
      run_dir_, run.step,
      {whole ? &*whole : &run.model, run.optimizer.get(), state.dump(), config_.tokenizer, description,
       run.ema ? &*run.ema : nullptr,
       run.model.is_image() ? diffusion::objective_json(config_.diffusion) : std::string(),
       sharded ? run.world.get() : nullptr,
       run.gathers ? std::function<int(const std::string&)>([weight_owner](const std::string& name) {
         const auto it = weight_owner.find(name);
         return it == weight_owner.end() ? 0 : it->second;  // a buffer: every rank holds it
       })
                   : nullptr,
       run.tensor ? &whole_state : nullptr},
      config_.keep);
  run.world->barrier();
  return committed;
}

std::string Trainer::run_description() const {
  nlohmann::json run = environment_description();
  run["config"] = nlohmann::json::parse(describe_config(config_));
  run["source"] = config_.source_json.empty() ? nlohmann::json() : nlohmann::json::parse(config_.source_json);
  run["data"] = nlohmann::json::parse(chain_.description());
  run["routes"] = route_list();
  run["mfu_peak_flops"] = config_.peak_flops;  // what MFU is measured against (peak_flops, train.h)
  return run.dump(2);
}

}  // namespace dew::train
