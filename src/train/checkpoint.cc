// Checkpoint directories (train.h): written whole or recognisably not at all, found newest first,
// loaded back. NOTE [commit marker]: a directory is a checkpoint only once COMMITTED exists in it;
// COMMITTED is written after the directory was renamed into place and flushed, so a crash at any
// point leaves either a `.partial-*` directory or an unmarked one, both ignored by readers (and
// reported) and removed by the run's trainer when it next starts (clear_unfinished_checkpoints).
#include <dew/error.h>
#include <dew/parallel.h>
#include <dew/safetensors.h>
#include <dew/train.h>

#include "io/files.h"
#include "io/json.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace dew::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = "COMMITTED";
constexpr const char* kFormat = "dew.checkpoint";

std::string step_name(int64_t step) {
  return fmt::format("step-{:08d}", step);
}

bool is_step_name(const std::string& name) {
  return name.size() == 13 && name.rfind("step-", 0) == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

// What a write did not finish: a `.partial-*` directory, or a step directory renamed into place whose
// marker was never written (NOTE [commit marker]).
struct Unfinished {
  fs::path path;
  bool unmarked;
  std::string why() const {
    return unmarked ? std::string("no ") + kMarker + " marker (written partly)"
                    : "a write that did not finish";
  }
};

// The committed checkpoints of a run, by step, and (when asked) the unfinished entries beside them.
std::vector<std::pair<int64_t, fs::path>> committed(const fs::path& dir,
                                                    std::vector<Unfinished>* unfinished) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, error)) {
    const std::string name = e.path().filename().string();
    const bool partial = name.rfind(".partial-", 0) == 0;
    if (!partial && !is_step_name(name)) continue;
    if (partial || !fs::is_regular_file(e.path() / kMarker, error)) {
      if (unfinished) unfinished->push_back({e.path(), !partial});
      continue;
    }
    out.emplace_back(std::stoll(name.substr(5)), e.path());
  }
  std::sort(out.begin(), out.end());
  if (unfinished)
    std::sort(unfinished->begin(), unfinished->end(),
              [](const Unfinished& a, const Unfinished& b) { return a.path < b.path; });
  return out;
}

void copy_tokenizer(const std::string& tokenizer, const fs::path& into) {
  const fs::path json =
      fs::is_directory(tokenizer) ? fs::path(tokenizer) / "tokenizer.json" : fs::path(tokenizer);
  for (const fs::path& file :
       {json, json.parent_path() / "tokenizer_config.json", json.parent_path() / "chat_template.jinja"})
    if (fs::is_regular_file(file))
      write_text_file((into / file.filename()).string(), read_text_file(file.string()));
}

}  // namespace

std::string save_checkpoint(const std::string& run_dir, int64_t step, const CheckpointParts& parts,
                            const CheckpointPolicy& policy) {
  DEW_REQUIRE(parts.model && parts.optimizer, "[checkpoint] expected a model and an optimizer to save");
  DEW_REQUIRE(step >= 0 && policy.keep_last >= 1 && policy.keep_every >= 0,
              "[checkpoint] step {}, keep_last {}, keep_every {}; expected step >= 0, keep_last >= 1, "
              "keep_every >= 0",
              step, policy.keep_last, policy.keep_every);
  // NOTE [sharded checkpoints]: with a sharded optimizer every rank writes its part of the state into
  // rank 0's partial directory (named by rank 0's process id, sent to all); rank 0 writes the rest and
  // commits only after a barrier, when every shard is flushed. The shards hold whole parameters'
  // state, so a checkpoint loads on any rank count: load_checkpoint merges them, each rank keeps its own.
  // Sharded parameters (ZeRO-3) are written the same way, as a Hugging Face sharded checkpoint (each
  // rank's model-RRRRR-of-PPPPP.safetensors, rank 0's index), which any loader reads whole.
  parallel::Communicator* ranks = parts.optimizer_ranks;
  const int rank = ranks ? ranks->rank() : 0, shards = ranks ? ranks->size() : 1;
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  const fs::path final = dir / step_name(step);
  int64_t pid = ::getpid();
  if (ranks) {
    Tensor t = Tensor::from_values({double(pid)}, {1}, DType::f64);
    ranks->broadcast(t, 0);
    pid = int64_t(t.to_f64_vector()[0]);
  }
  const fs::path partial = dir / fmt::format(".partial-{}-{}", step_name(step), pid);
  if (rank == 0) {
    DEW_REQUIRE(!fs::exists(final), "[checkpoint] {} exists already; a step is checkpointed once",
                final.string());
    fs::remove_all(partial);
    fs::create_directories(partial);
  }
  if (ranks) ranks->barrier();  // the directory exists for every rank's shard
  try {
    const std::map<std::string, Tensor> named =
        parts.optimizer_state ? *parts.optimizer_state : parts.optimizer->state();
    const std::vector<std::pair<std::string, Tensor>> state(named.begin(), named.end());
    save_safetensors((partial / (ranks ? fmt::format("optimizer-{:05d}-of-{:05d}.safetensors", rank, shards)
                                       : std::string("optimizer.safetensors")))
                         .string(),
                     state);
    if (parts.weight_owner) {  // ZeRO-3: every rank its own weights
      DEW_REQUIRE(ranks, "[checkpoint] sharded weights need the ranks that hold them (optimizer_ranks)");
      const RankShards by_rank{rank, shards, parts.weight_owner};
      parts.model->save(partial.string(), &by_rank);
    }
    if (rank == 0) {
      if (!parts.weight_owner) parts.model->save(partial.string());
      if (!parts.tokenizer.empty()) copy_tokenizer(parts.tokenizer, partial);
      if (parts.ema) parts.ema->save((partial / "ema.safetensors").string());
      if (!parts.diffusion_json.empty())
        write_text_file((partial / "diffusion.json").string(), parts.diffusion_json);
      write_text_file((partial / "checkpoint.json").string(),
                      nlohmann::json{{"format", kFormat},
                                     {"version", 1},
                                     {"step", step},
                                     {"optimizer_steps", parts.optimizer->steps()},
                                     {"optimizer_shards", ranks ? shards : 0}}
                              .dump(2) +
                          "\n");
      parse_json(parts.trainer_state, "trainer state");  // refuse what could not be read back
      write_text_file((partial / "trainer.json").string(), parts.trainer_state);
      write_text_file((partial / "run.json").string(), parts.run_json);
    }
    if (ranks) ranks->barrier();  // every shard flushed (save_safetensors writes whole files)
    if (rank == 0) {
      flush_directory(partial.string());
      fs::rename(partial, final);
      flush_directory(dir.string());
    }
  } catch (...) {
    std::error_code ignore;
    if (rank == 0) fs::remove_all(partial, ignore);
    throw;
  }
  if (rank != 0) return final.string();
  write_text_file((final / kMarker).string(), step_name(step) + "\n");  // NOTE [commit marker]
  // Keep the newest keep_last, and every keep_every-th. Each goes by a rename first, so a kill while
  // deleting leaves a `.partial-*` directory, never a committed checkpoint with files missing.
  const auto all = committed(dir, nullptr);
  for (size_t i = 0; i + size_t(policy.keep_last) < all.size(); ++i) {
    const auto& [old_step, path] = all[i];
    if (policy.keep_every > 0 && old_step % policy.keep_every == 0) continue;
    const fs::path doomed = dir / fmt::format(".partial-pruned-{}-{}", step_name(old_step), ::getpid());
    fs::rename(path, doomed);
    fs::remove_all(doomed);
  }
  return final.string();
}

std::vector<std::string> clear_unfinished_checkpoints(const std::string& run_dir) {
  std::vector<Unfinished> unfinished;
  committed(fs::path(run_dir) / "checkpoints", &unfinished);
  std::vector<std::string> said;
  std::error_code error;
  for (const Unfinished& u : unfinished) {
    uintmax_t bytes = 0;
    for (const fs::directory_entry& f : fs::recursive_directory_iterator(u.path, error))
      if (f.is_regular_file(error)) bytes += f.file_size(error);
    fs::remove_all(u.path);
    said.push_back(fmt::format("removed {} ({:.1f} MB): {}{}", u.path.string(), double(bytes) / 1e6, u.why(),
                               u.unmarked ? "; its steps are redone" : ""));
  }
  return said;
}

CheckpointScan find_checkpoints(const std::string& run_dir) {
  CheckpointScan scan;
  std::vector<Unfinished> unfinished;
  const auto all = committed(fs::path(run_dir) / "checkpoints", &unfinished);
  if (!all.empty()) scan.step = all.back().first, scan.latest = all.back().second.string();
  for (const Unfinished& u : unfinished) scan.ignored.push_back(u.path.string() + ": " + u.why());
  return scan;
}

std::string model_directory(const std::string& path) {
  if (!fs::is_directory(fs::path(path) / "checkpoints")) return path;
  const CheckpointScan scan = find_checkpoints(path);
  DEW_REQUIRE(
      !scan.latest.empty(),
      "{} is a run directory without a committed checkpoint yet; train it first (dew train) or give a "
      "model directory{}",
      path, scan.ignored.empty() ? "" : fmt::format(" (passed over: {})", fmt::join(scan.ignored, "; ")));
  return scan.latest;
}

LoadedCheckpoint load_checkpoint(const std::string& directory, const HeldParameters& held) {
  const fs::path dir(directory);
  DEW_REQUIRE(fs::is_regular_file(dir / kMarker),
              "[checkpoint] {} has no {} marker: it was not finished; resume from a committed checkpoint",
              directory, kMarker);
  const nlohmann::json info =
      parse_json(read_text_file((dir / "checkpoint.json").string()), directory + "/checkpoint.json");
  const JsonFields fields{info, directory + "/checkpoint.json"};
  DEW_REQUIRE(fields.text_or("format", "") == kFormat && fields.number_or("version", 0) == 1,
              "[checkpoint] {}/checkpoint.json is not a version-1 {} file", directory, kFormat);
  LoadedCheckpoint out{
      TrainedModel::load(directory, held),
      fs::exists(dir / "ema.safetensors") ? (dir / "ema.safetensors").string() : std::string(),
      {},
      int64_t(fields.number_or("step", 0)),
      int64_t(fields.number_or("optimizer_steps", 0)),
      read_text_file((dir / "trainer.json").string())};
  // One file, or a sharded optimizer's shards (NOTE [sharded checkpoints]) merged.
  const int64_t shards = int64_t(fields.number_or("optimizer_shards", 0));
  std::vector<std::string> files;
  for (int64_t r = 0; r < shards; ++r)
    files.push_back((dir / fmt::format("optimizer-{:05d}-of-{:05d}.safetensors", r, shards)).string());
  if (shards == 0) files.push_back((dir / "optimizer.safetensors").string());
  for (const std::string& file : files) {
    const SafetensorsFile optimizer = SafetensorsFile::open(file);
    for (const auto& entry : optimizer.header().tensors)
      if (!held || held(Optimizer::parameter_of_state(entry.name)))
        out.optimizer_state[entry.name] = optimizer.load(entry.name);
  }
  return out;
}

}  // namespace dew::train
