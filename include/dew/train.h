// Training's parts that stand alone: optimizers (AdamW as torch.optim.AdamW computes it, SGD with
// momentum or Nesterov as torch.optim.SGD, Lion, Muon), learning-rate schedules and gradient clipping by
// global norm. Parameters are float32 leaves (master weights); their .grad() holds the gradient.
// And the next-token objective over packed batches (SFT: the batch's loss_mask), one training step (f32
// or bf16 mixed precision), checkpoint directories and the Trainer.
#pragma once

#include <dew/data.h>
#include <dew/diffusion.h>
#include <dew/image_models.h>
#include <dew/models.h>
#include <dew/tensor.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dew::parallel {
class Communicator;
}

namespace dew::train {

class ParameterGathers;

// What a run trains, as its [model] model_type says: a causal language model (the next-token
// objective) or an image backbone, DiT or UNet (a diffusion objective, [diffusion]).
class TrainedModel {
 public:
  TrainedModel() = default;
  TrainedModel(CausalLM model) : model_(std::move(model)) {}
  TrainedModel(ImageModel model) : model_(std::move(model)) {}
  // f32; with `held`, the others' bytes released (HeldParameters: a language model never holds them,
  // an image model, small, holds them until it returns).
  static TrainedModel init(const std::string& model_json, uint64_t seed, const HeldParameters& held = {});
  static TrainedModel load(const std::string& directory, const HeldParameters& held = {});
  bool is_image() const { return std::holds_alternative<ImageModel>(model_); }
  CausalLM& language();  // refuses an image model, naming both
  const CausalLM& language() const;
  ImageModel& image();
  const ImageModel& image() const;
  std::map<std::string, Tensor>& parameters();
  const std::map<std::string, Tensor>& parameters() const;
  std::string model_type() const;
  int64_t parameter_count() const;
  // With `by_rank`, this rank's part of a checkpoint sharded by ranks (save_safetensors_checkpoint).
  void save(const std::string& directory, const RankShards* by_rank = nullptr) const;
  TrainedModel to(Device device) const;
  void set_layer_boundaries(LayerBoundaries* boundaries);  // the model's (CausalLM, ImageModel)

 private:
  std::variant<CausalLM, ImageModel> model_;
};

// The exponential moving average of a model's weights: after update n (1-based) each average moves
// to decay_n avg + (1 - decay_n) weight, decay_n = min(decay, (1 + n) / (10 + n)) with warm-up (so
// early averages follow the weights), decay without. Kept in f32 beside the weights; a checkpoint
// holds it (ema.safetensors) and samples are drawn from it.
class Ema {
 public:
  Ema(const std::map<std::string, Tensor>& parameters, double decay, bool warmup);
  void update(const std::map<std::string, Tensor>& parameters);
  int64_t updates() const { return updates_; }
  const std::map<std::string, Tensor>& averages() const { return averages_; }
  // A copy of `model` with the averages as its weights.
  TrainedModel applied_to(const TrainedModel& model) const;
  void save(const std::string& path) const;  // a safetensors file, the update count in its metadata
  void load(const std::string& path);        // refuses averages of other parameters or shapes

 private:
  std::map<std::string, Tensor> averages_;
  double decay_;
  bool warmup_;
  int64_t updates_ = 0;
};

// A parameter and its group's settings: its learning rate is the schedule's times lr_scale.
struct Param {
  std::string name;
  Tensor tensor;  // f32, contiguous, requires_grad
  double lr_scale = 1;
  double weight_decay = 0;
};

// Decay on matrices, none on norms, biases and embeddings (1-D tensors, and names of embedding
// tables: embed_tokens, wte, wpe), as GPT-2 and Llama recipes do. Buffers (is_buffer) are left out.
std::vector<Param> default_groups(std::map<std::string, Tensor>& parameters, double weight_decay);
// Whether a parameter is an embedding table (embed_tokens, wte, wpe): looked up by id, not multiplied.
bool is_embedding_table(const std::string& name);

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
};
struct SgdOptions {
  double momentum = 0.9, dampening = 0;
  bool nesterov = false;
};
struct LionOptions {
  double beta1 = 0.9, beta2 = 0.99;
};
// Muon for 2-D hidden matrices; AdamW (with `adamw`) for embeddings, the head, norms and biases.
struct MuonOptions {
  double momentum = 0.95;
  bool nesterov = true;
  int ns_steps = 5;  // Newton-Schulz iterations
  AdamWOptions adamw;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient, at learning rate `lr` (times its lr_scale).
  virtual void step(double lr) = 0;
  void zero_grad();
  int64_t steps() const { return steps_; }
  // Its state by name ("exp_avg.<param>", ...) for checkpoints, and back; load_state refuses a state
  // of other parameters or shapes, naming the tensor.
  std::map<std::string, Tensor> state() const;
  void load_state(const std::map<std::string, Tensor>& state, int64_t steps);
  // The parameter a state entry belongs to: "exp_avg.model.norm.weight" -> "model.norm.weight".
  static std::string parameter_of_state(const std::string& key) { return key.substr(key.find('.') + 1); }

 protected:
  explicit Optimizer(std::vector<Param> params, std::vector<std::string> buffers);
  // Buffer `k` (in the order given to the constructor) of parameter `i`, zeros until first used, on
  // the parameter's device.
  Tensor& buffer_tensor(size_t k, size_t i);
  std::vector<Param> params_;
  int64_t steps_ = 0;

 private:
  std::vector<std::string> buffer_names_;
  std::vector<std::vector<Tensor>> buffers_;  // [k][i]
};

std::unique_ptr<Optimizer> make_adamw(std::vector<Param> params, const AdamWOptions& options = {});
std::unique_ptr<Optimizer> make_sgd(std::vector<Param> params, const SgdOptions& options = {});
std::unique_ptr<Optimizer> make_lion(std::vector<Param> params, const LionOptions& options = {});
std::unique_ptr<Optimizer> make_muon(std::vector<Param> params, const MuonOptions& options = {});

// Linear warmup over `warmup_steps` (lr = peak (step+1)/warmup), then cosine, linear or constant
// to `min_lr_ratio` x peak at total_steps; or WSD: warmup, stable at peak, then a linear decay over
// the last `decay_fraction` of the steps to min_lr_ratio x peak.
struct LrSchedule {
  enum class Shape { cosine, linear, constant, wsd };
  Shape shape = Shape::cosine;
  double peak_lr = 3e-4;
  int64_t warmup_steps = 0, total_steps = 1;
  double min_lr_ratio = 0.1;
  double decay_fraction = 0.2;    // WSD only
  double at(int64_t step) const;  // the lr of optimizer step `step`, 0-based
};

// Scales every gradient by max_norm / (norm + 1e-6) when their global L2 norm exceeds max_norm (as
// torch.nn.utils.clip_grad_norm_ does) and returns the norm before clipping. The norm is summed in
// float64 over fixed blocks, so it does not depend on the thread count.
double clip_grad_norm(const std::vector<Param>& params, double max_norm);

// The next-token objective over a packed batch (rows of T+1 tokens, data.h). Targets are ignored
// where token t+1 lies in another document or in padding.
inline constexpr int64_t kIgnoreTarget = -100;
Tensor next_token_targets(const data::Batch& batch);  // (rows, T) i64
struct LmLossOptions {
  double z_loss = 0;  // adds z_loss x mean(logsumexp^2) over real targets (PaLM's auxiliary loss)
  // An experts model whose config sets output_router_logits adds its routers' losses, weighted by
  // router_aux_loss_coef and router_z_loss_coef (docs/moe.md); training does, evaluation does not.
  bool router_losses = false;
};
struct LmLoss {
  Tensor loss;  // scalar: mean cross-entropy over real targets (plus the z-loss), differentiable
  int64_t targets = 0, correct = 0;  // real targets, and those the argmax predicts (token accuracy)
  Tensor target_ids;                 // (rows, T) i64: next_token_targets(batch)
  double router_loss = 0;            // the weighted router losses within `loss`
  std::vector<std::vector<int64_t>> expert_tokens;  // per MoE layer, the real tokens each expert took
  double accuracy() const { return targets ? double(correct) / double(targets) : 0; }
};
LmLoss lm_loss(const CausalLM& model, const data::Batch& batch, const LmLossOptions& options = {});

// DeepSeek-V3's auxiliary-loss-free update of a model's expert score biases (e_score_correction_bias,
// is_buffer): for each sparse layer, with `expert_tokens` its tokens per expert in the step (StepResult),
// bias_e += rate * sign(mean load - load_e). A model without such biases is left as it is.
void update_expert_biases(CausalLM& model, const std::vector<std::vector<int64_t>>& expert_tokens,
                          double rate);

// One optimizer step: for each of `accumulation` microbatches from next_batch, lm_loss / accumulation
// and backward; the gradients' global norm, clipped to grad_clip (0: measured only); the optimizer at
// `lr` — unless the loss or the norm is not finite (applied = false) — and the gradients zeroed. When
// next_batch runs dry, nothing is updated (complete = false).
// compute bf16 is mixed precision: every microbatch runs on one bf16 copy of the weights, cast once per
// step (a recorded cast, so gradients arrive in the f32 master weights and sum there in f32),
// activations and matmul operands in bf16 with f32 accumulation; the loss, the gradients, their norm
// and the optimizer state stay f32.
// The ranks of a data-parallel run and what its steps learn about them: the order in which backward
// completes the parameters' gradients (the first step's, rank 0's for every rank), by which gradients
// are bucketed for the all-reduces that run while backward goes on (docs/parallel.md).
struct DataParallel {
  parallel::Communicator* world = nullptr;
  int64_t bucket_elements = int64_t(1) << 21;  // f32 gradients per bucket (8 MiB)
  std::vector<int64_t> ready_order;            // indices into the step's params; empty until the first step
  // Sharded optimizer state (ZeRO-1, [parallel] shard = "optimizer"): the rank that holds each
  // parameter's state and updates it, then sends it to the others (owners()); empty: every rank.
  std::vector<int> owner;
  // ZeRO-2 ("gradients"): each gradient is reduced to its owner only, and the others drop theirs.
  bool gradients_to_owners = false;
  // ZeRO-3 ("full"): the parameters' bytes too are the owners' alone, gathered for each use (NOTE
  // [parameter gathers], src/train/parameter_gathers.h); null otherwise.
  ParameterGathers* gathers = nullptr;
};
// Each parameter to one rank, whole (Muon needs whole matrices): largest first, to the rank holding
// the fewest elements so far (the lowest on a tie) — the same on every rank.
std::vector<int> owners(const std::vector<Param>& params, int ranks);

// Data parallel (docs/parallel.md): each batch's rows form `row_groups` equal groups, each group's
// gradient from its own forward and backward (over the step's microbatches), and the step's gradient
// is their sum in fixed_tree_sum's order over the groups. Rank r of `data_parallel` (P ranks) runs
// groups [r G/P, (r+1) G/P) and the ranks' sums meet in the communicator's fixed tree, so a step's
// losses and gradients are the same bits on 1 process or on P (G/P a power of two).
struct StepOptions {
  int64_t accumulation = 1;
  double lr = 0, grad_clip = 1.0, z_loss = 0;
  DType compute = DType::f32;  // f32, or bf16 (mixed precision)
  int64_t row_groups = 1;
  DataParallel* data_parallel = nullptr;  // null: this process alone
  // Tensor parallelism (CausalLM::tensor_shard): the group the model is split over, and which params
  // are split — their squares add over the group in the gradient norm, a whole one's count once.
  parallel::Communicator* tensor_group = nullptr;
  std::vector<bool> tensor_split;  // per param
};
struct StepResult {
  bool complete = false, applied = false;
  int64_t images = 0;                  // an image step's real images
  double loss = NAN, grad_norm = NAN;  // the microbatches' mean loss; the norm before clipping
  int64_t tokens = 0, T = 0;           // the step's input tokens; the batches' sequence length
  int64_t targets = 0, correct = 0;    // real targets, and those the argmax predicted (token accuracy)
  double data_wait_s = 0;              // time spent in next_batch
  double router_loss = 0;              // the microbatches' mean weighted router losses, within `loss`
  std::vector<std::vector<int64_t>> expert_tokens;  // per MoE layer, summed over the microbatches
  // Data parallel: gradient bytes this rank sent; seconds it waited for the reductions after backward
  // (what backward did not hide).
  int64_t communicated_bytes = 0;
  double communication_wait_s = 0;
};
StepResult train_step(const CausalLM& model, const std::vector<Param>& params, Optimizer& optimizer,
                      const StepOptions& options,
                      const std::function<std::optional<data::Batch>()>& next_batch);

// A diffusion step of a DiT over batches of images (data.h): for each microbatch, its real rows, the
// class labels replaced by the null class with the model's class_dropout_prob (classifier-free
// guidance), and diffusion_loss with draws keyed by (seed, step, microbatch); then as train_step.
// StepResult counts images, not tokens.
struct ImageStepOptions {
  StepOptions step;
  diffusion::ObjectiveOptions objective;
  uint64_t seed = 0;
  int64_t step_index = 0;  // the optimizer step's number, for the draws
};
StepResult image_train_step(const ImageModel& model, const std::vector<Param>& params, Optimizer& optimizer,
                            const ImageStepOptions& options,
                            const std::function<std::optional<data::Batch>()>& next_batch);
// The labels a step trains on: each replaced by num_classes (the null class) with the model's
// class_dropout_prob, drawn from (seed, step, microbatch); undefined when the model has no classes.
Tensor dropped_labels(const ImageModel& model, const Tensor& labels, uint64_t seed, int64_t step,
                      int64_t micro);
// Training FLOPs per image (NOTE [training FLOPs], trainer.cc): 3 forward passes' worth (the model's
// forward_flops); MeanFlow's tangent pass adds a fourth.
double training_flops_per_image(const ImageModel& model, diffusion::Objective objective);
// An image model's samples: `per_class` images of each class in `classes` (rows; empty: every class) drawn
// with `sampler` in `steps` steps and guidance `cfg` (1: none), or per_class x 8 unconditional
// images; (N,C,H,W) f32 in [-1, 1].
struct ImageSampling {
  std::string sampler = "dpmpp-2m";
  int64_t steps = 20;
  double cfg = 1;
  int64_t per_class = 8;
  uint64_t seed = 0;
  std::vector<int64_t> classes;
};
Tensor sample_images(const ImageModel& model, const diffusion::ObjectiveOptions& objective,
                     const ImageSampling& options);
// Images (N,C,H,W) in [-1, 1] (clamped) as one PNG of `columns` per row, 2 black pixels between
// images; C is 1 (gray) or 3 (RGB).
void save_image_grid(const Tensor& images, int64_t columns, const std::string& path);

// Where a training step's time goes (docs/training.md, "Where the time goes"): the op profile's
// kernel times (runtime.h) sorted into kinds, per step. GEMMs are split by role — forward, input
// gradient, weight gradient, the forward recomputed in backward, and the head (a dimension equal to
// the vocabulary) — and listed by shape; "remainder" is the step time no kernel accounts for
// (differentiation, allocation, dispatch). The step's time leaves out the profile's own bookkeeping.
// Minor page faults count pages the system mapped fresh.
struct StepProfile {
  struct Row {
    std::string name;
    int64_t calls = 0;   // per step
    double seconds = 0;  // per step
    double flops = 0;    // per step, where counted
  };
  int64_t steps = 0;
  double step_seconds = 0, minor_faults = 0, system_seconds = 0;  // per step
  std::vector<Row> kinds;  // every kind, in a fixed order, remainder last
  std::vector<Row> gemms;  // "role  [batch x] M x N x K  case", longest first
};
// Measures the steps between begin_step() and end_step() calls: the op profile is on inside them only.
class StepProfiler {
 public:
  void begin_step();
  void end_step();
  StepProfile result(int64_t vocab) const;  // the kinds of the measured steps' ops, per step

 private:
  int64_t steps_ = 0;
  double wall_ = 0, faults_ = 0, system_ = 0;
  double wall_start_ = 0, faults_start_ = 0, system_start_ = 0;
};
std::string step_profile_json(const StepProfile& profile);
StepProfile step_profile_from_json(const std::string& json);  // what step_profile_json wrote
// A table: ms per step by kind (beside `other`'s where given), then each system's GEMMs by shape.
std::string format_step_profiles(const StepProfile& dew, const StepProfile* other = nullptr,
                                 std::string_view other_name = "");

// Checkpoints: RUN_DIR/checkpoints/step-NNNNNNNN/ holds config.json and model.safetensors (so that
// `dew generate` and `dew score` load it as a model), the tokenizer's files, ema.safetensors (the
// weights' average, when kept), diffusion.json (an image model's objective), optimizer.safetensors,
// checkpoint.json (step, optimizer steps), trainer.json (the caller's state: counters, RNG counters,
// the data chain's position), run.json, and COMMITTED, written last. It is written in a temporary
// directory, every file flushed, renamed into place, the directory flushed, then marked.
struct CheckpointParts {
  const TrainedModel* model = nullptr;
  const Optimizer* optimizer = nullptr;
  std::string trainer_state = "{}";  // JSON
  std::string tokenizer;             // a tokenizer.json or its directory, copied in; empty: none
  std::string run_json = "{}";
  const Ema* ema = nullptr;    // optional: ema.safetensors
  std::string diffusion_json;  // an image model's objective (diffusion.json), for `dew sample`
  // A sharded optimizer's ranks: every rank calls save_checkpoint with its part of the state and writes
  // optimizer-RRRRR-of-PPPPP.safetensors; rank 0 writes the rest and commits once all have flushed.
  parallel::Communicator* optimizer_ranks = nullptr;
  // Sharded parameters too (ZeRO-3): each rank writes the weights this gives it (by name) as its part
  // of the model's files (RankShards), rank 0 their index; empty: rank 0 writes them all.
  std::function<int(const std::string& name)> weight_owner;
  // Written in place of optimizer->state() when set (tensor parallelism: the ranks' slices made whole).
  const std::map<std::string, Tensor>* optimizer_state = nullptr;
};
struct CheckpointPolicy {
  int64_t keep_last = 3;   // committed checkpoints kept, newest first
  int64_t keep_every = 0;  // and those whose step is a multiple of this (0: none)
};
// Writes checkpoint `step` and then deletes the committed ones the policy does not keep. Returns its
// directory. A step already checkpointed is refused.
std::string save_checkpoint(const std::string& run_dir, int64_t step, const CheckpointParts& parts,
                            const CheckpointPolicy& policy = {});

struct CheckpointScan {
  std::string latest;  // the newest committed checkpoint's directory; empty: none
  int64_t step = -1;
  std::vector<std::string> ignored;  // "path: why" for each partial or unmarked one
};
CheckpointScan find_checkpoints(const std::string& run_dir);
// For the run directory's one trainer (it holds the lock): removes what killed writes left under
// checkpoints/ (`.partial-*` directories, and checkpoint directories renamed into place whose commit
// marker was never written, whose steps are then redone). Returns a line for each.
std::vector<std::string> clear_unfinished_checkpoints(const std::string& run_dir);
// A model directory to load: `path` itself, or, for a run directory, its newest committed checkpoint
// (`dew generate --model runs/default`). A run directory without one is an error saying so.
std::string model_directory(const std::string& path);

struct LoadedCheckpoint {
  TrainedModel model;
  std::string ema_path;  // its ema.safetensors, or empty
  std::map<std::string, Tensor> optimizer_state;
  int64_t step = 0, optimizer_steps = 0;
  std::string trainer_state;
};
// With `held`, only those parameters' weights and optimizer state (HeldParameters).
LoadedCheckpoint load_checkpoint(const std::string& directory, const HeldParameters& held = {});

// What a run trains and how (docs/training.md has the TOML keys).
struct TrainerConfig {
  std::string model_json;       // a config.json's content: model_type and sizes
  uint64_t seed = 0;            // the initialization's
  int64_t steps = 100;          // optimizer steps
  int64_t accumulation = 1;     // microbatches (batches of the chain) per optimizer step
  int64_t row_groups = 0;       // [parallel] row_groups (StepOptions); 0: the process count
  double bucket_mib = 8;        // [parallel] bucket_mib: gradients per all-reduce (DataParallel)
  std::string shard = "none";   // [parallel] shard: "none", "optimizer", "gradients" or "full" (DataParallel)
  double timeout_s = 300;       // [parallel] timeout_s: a collective's wait before the run stops
  int64_t tensor_parallel = 1;  // [parallel] tensor: the ranks each model is split over (docs/parallel.md)
  std::string optimizer = "adamw";  // adamw, sgd, lion or muon
  AdamWOptions adamw;
  SgdOptions sgd;
  LionOptions lion;
  MuonOptions muon;
  double weight_decay = 0.1;  // on matrices (default_groups)
  LrSchedule schedule;        // total_steps 0 or 1: `steps`
  double grad_clip = 1.0;     // global norm; 0: measured, not clipped
  double z_loss = 0;
  // Auxiliary-loss-free balancing (DeepSeek-V3): after each step every expert's score bias moves by
  // this much towards balance (up for an expert below its layer's mean load, down above it).
  double expert_bias_update = 0.001;
  DType compute = DType::f32;  // [train] precision: "auto" (bf16 on CPUs with AVX-512 BF16), "f32", "bf16"
  Device device;               // [train] device: "cpu" (the default) or "cuda:N" (docs/cuda.md)
  int64_t log_every = 10;
  int64_t checkpoint_every = 0;  // 0: at the end (and when stopped) only
  CheckpointPolicy keep;
  std::string tokenizer;     // copied into each checkpoint
  int64_t max_skips = 5;     // consecutive steps with a non-finite loss or norm that end the run
  double peak_flops = 0;     // this machine's FLOP/s (sgemm), for MFU; 0: not reported
  int64_t eval_every = 0;    // steps between held-out evaluations; 0: none
  int64_t eval_batches = 4;  // the first this many batches of a fresh held-out chain, each time
  int64_t sample_every = 0;  // steps between samples; 0: none
  int64_t sample_tokens = 32;
  std::vector<std::string> sample_prompts;  // greedy continuations, logged and in samples.jsonl
  // A new run's initial weights (not its optimizer, counters or data position): a model directory, a
  // checkpoint, or a run directory (its newest checkpoint). Empty: a fresh initialization from `seed`.
  std::string init_from;
  double ema_decay = 0;  // the weights' moving average (Ema): 0 none, else e.g. 0.999
  bool ema_warmup = true;
  diffusion::ObjectiveOptions diffusion;  // [diffusion]: an image model's objective
  ImageSampling image_samples;            // [sample]: an image model's grids every sample_every steps
  // [sample] classifier: with each grid, `quality_samples` more samples (every class alike) measured by
  // this image classifier (image_quality.h) against as many held-out images: frechet_distance and
  // sample_accuracy in metrics.jsonl. Needs the held-out chain.
  std::string quality_classifier;
  int64_t quality_samples = 500;
  std::string source_json;  // the config as given (TOML as JSON, overrides applied), for run.json
};

// The resolved config (every field, defaults included) as JSON, for run.json.
std::string describe_config(const TrainerConfig& config);

// Training FLOPs per token of a model at sequence length T (NOTE [training FLOPs], trainer.cc):
// 6 N + 12 L H D T, N the parameters that multiply (every matrix but the embedding lookups, the head
// counted once even when tied). A model split `tensor_parallel` ways (CausalLM::tensor_shard) counts
// its slices as the whole.
double training_flops_per_token(const CausalLM& model, int64_t T, int64_t tensor_parallel = 1);

// The FLOP/s MFU is measured against (TrainerConfig::peak_flops): the best of three n^3 products through
// Dew's matmul in `compute` on `device` (n = 2048 on a CPU, 8192 on a GPU), measured now — the host's
// rate drifts from minute to minute, and a busy machine measures low.
double peak_flops(Device device, DType compute);

// The [model], [train], [optimizer] and [schedule] tables of a TOML config (docs/training.md), with
// "key=value" overrides; the [data] table is data::chain_from_config's.
TrainerConfig trainer_config_from_toml(const std::string& path,
                                       const std::vector<std::string>& overrides = {});

// The step: for each microbatch, lm_loss / accumulation and backward; the gradients' global norm
// (clipped); the optimizer at the schedule's lr — or, when the loss or the norm is not finite, no
// update (counted). It writes RUN_DIR/metrics.jsonl (a line per log step: step, tokens, loss, lr,
// grad_norm, tokens_per_s, mfu, step_s, data_wait_s, peak_bytes, skipped, accuracy, perplexity) and
// checkpoints; a run
// directory with a committed checkpoint resumes from it — the weights, the optimizer, the counters
// and the data chain's position — and continues exactly as if it had not stopped. Every eval_every
// steps a line {"step", "eval_loss", "eval_targets", "eval_accuracy", "eval_perplexity",
// "unigram_entropy"} joins metrics.jsonl; every
// sample_every steps the greedy continuations of sample_prompts go to the log and RUN_DIR/samples.jsonl.
// RUN_DIR/run.json (and each checkpoint's) records the resolved config, the config as given, the data
// chain, the routes the ops took, library versions and the machine. Running out of memory (OutOfMemory
// or std::bad_alloc) ends the run with an Error naming the step and the last checkpoint, left intact.
// Writes RUN_DIR/report.html: a self-contained page of SVG charts (loss and eval_loss, lr, grad_norm,
// tokens/s, MFU) from metrics.jsonl. Returns its path.
std::string write_report(const std::string& run_dir);

class Trainer {
 public:
  // `eval_chain` makes the held-out chain (a fresh one for each evaluation); needed with eval_every.
  Trainer(TrainerConfig config, data::Chain chain, std::string run_dir,
          std::function<data::Chain()> eval_chain = {});
  struct Outcome {
    int64_t step = 0;
    bool stopped = false;  // by the stop flag, with a checkpoint written
    std::string checkpoint;
    double last_loss = 0;
    // The last held-out evaluation (NaN when none ran): its loss and the unigram entropy of its
    // targets, the loss of a model that knew only token frequencies — both in nats.
    double eval_loss = NAN, unigram_entropy = NAN;
    bool finished_already = false;       // the run directory's run had reached config.steps: nothing ran
    int rank = 0, ranks = 1;             // data parallel: this process's rank of how many; rank 0 reports
    std::optional<StepProfile> profile;  // with `profile` on: every step but this process's first
  };
  // Where the step time goes (`dew train --profile`): the steps after this process's first are
  // profiled; the result is in the Outcome and in RUN_DIR/profile.json.
  bool profile = false;
  // Trains until config.steps, or until *stop becomes true (checked after each step; the step is
  // finished and checkpointed first). A run directory whose run reached config.steps already is left
  // as it is (Outcome::finished_already).
  Outcome run(const std::atomic<bool>* stop = nullptr);
  // After each optimizer step, for a live display: where the run is and how long the rest will take.
  struct Progress {
    int64_t step = 0, steps = 0;
    double loss = 0, lr = 0, tokens_per_s = 0;
    double elapsed_s = 0, eta_s = 0;  // since this process began training, and to config.steps
  };
  std::function<void(const Progress&)> on_step;
  std::function<void(const std::string& line)> on_log;  // each message for a person

 private:
  struct Run;  // one run's model, optimizer, counters and metrics file
  void resume_or_initialize(Run& run);
  void step(Run& run);  // one optimizer step, its progress and its log line
  void log(Run& run, const StepResult& result, const Progress& progress, double step_s);
  void evaluate(Run& run);
  void sample(Run& run);
  void evaluate_images(Run& run);  // trainer_images.cc
  void sample_images(Run& run);
  void measure_samples(Run& run, const ImageModel& model);
  std::string checkpoint(Run& run);
  void require_same_run_on_every_rank(Run& run) const;
  void split_for_tensor_parallelism(Run& run);  // NOTE [2-D grid] (trainer.cc)
  HeldParameters own_parameters(const parallel::Communicator& replicas) const;
  bool stop_requested(Run& run, const std::atomic<bool>* stop) const;
  int64_t row_groups(const Run& run) const;  // [parallel] row_groups, resolved
  void start_heartbeat(Run& run) const;      // NOTE [heartbeats]
  void wait_for_leader(Run& run) const;
  std::string ranks_behind(const Run& run) const;
  std::string run_description() const;  // run.json
  void say(const std::string& line) const;

  TrainerConfig config_;
  data::Chain chain_;
  std::string run_dir_;
  std::function<data::Chain()> eval_chain_;
  std::vector<std::string> notes_;  // said when the run starts (a warm-up clipped to the run)
  bool reports_ = true;             // false on a data-parallel run's ranks but rank 0
};

}  // namespace dew::train
