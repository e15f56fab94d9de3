// Language-model families from Hugging Face checkpoints: the config read from config.json by
// model_type, the parameters under their Hugging Face names, and the forward pass to logits written
// with Dew's ops (so it differentiates). Families: llama, mistral, qwen2, qwen3, mixtral, qwen3_moe,
// gpt_oss, glm4_moe, gemma, gemma2, gemma3_text (gemma3's text half), olmo2 and qwen3_next (one
// decoder with switches, five of them with experts, qwen3_next with Gated DeltaNet layers between its
// attention layers), gpt2, and mamba2 (state space layers, no attention). A config field
// that changes the mathematics and is not supported is refused by name; nothing is silently ignored.
#pragma once

#include <dew/ops.h>
#include <dew/safetensors.h>
#include <dew/tensor.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dew {

// Rotary position embedding: `rope_theta` with `rope_scaling`, or the newer `rope_parameters`.
struct RopeConfig {
  std::string type = "default";  // default, linear, dynamic, yarn, llama3
  double theta = 10000;
  double factor = 1;
  double partial_rotary_factor = 1;
  // llama3
  double low_freq_factor = 1, high_freq_factor = 4;
  int64_t original_max_position_embeddings = 0;  // 0: not given
  // yarn
  std::optional<double> attention_factor, mscale, mscale_all_dim;
  double beta_fast = 32, beta_slow = 1;
  bool truncate = true;
};

// Mixture-of-experts MLPs (mixtral, qwen3_moe, gpt_oss, glm4_moe; docs/moe.md): a router scores E
// experts per token, the top K take the token, and their SwiGLU outputs are summed with the router's
// weights.
struct MoeConfig {
  int64_t num_experts = 0;            // E; 0: every MLP is dense
  int64_t experts_per_token = 0;      // K
  int64_t intermediate_size = 0;      // each expert's hidden width
  bool normalize_top_k = false;       // the K kept weights rescaled to sum to 1 (mixtral always)
  int64_t sparse_step = 1;            // qwen3_moe decoder_sparse_step: layers i with (i+1) % step == 0
  std::vector<int64_t> dense_layers;  // qwen3_moe mlp_only_layers: dense whatever the step
  // output_router_logits: training adds aux_loss_coef x the load-balancing loss and z_loss_coef x
  // the router z-loss, as transformers does when that flag is set.
  bool router_losses = false;
  double aux_loss_coef = 0.001, z_loss_coef = 0;
  // gpt_oss: the router (with a bias) keeps the K largest logits and takes their softmax, and the
  // experts (with biases) run a clamped SwiGLU: gate <= limit, |up| <= limit, (up + 1) gate sigmoid(alpha
  // gate).
  bool gpt_oss = false;
  double swiglu_alpha = 1.702, swiglu_limit = 7.0;
  // glm4_moe (DeepSeek-V3's routing): sigmoid scores; the experts chosen by score plus a per-expert
  // bias (e_score_correction_bias, moved by training to balance the load, never by gradients) within
  // the `groups_kept` of `groups` expert groups whose two best scores sum highest; weighted by the
  // scores alone (renormalized when normalize_top_k) times routed_scaling.
  bool sigmoid_scores = false;
  int64_t groups = 1, groups_kept = 1;
  double routed_scaling = 1;
  int64_t shared_intermediate_size = 0;  // shared experts' MLP beside the routed ones (0: none)
  // qwen3_next: the shared expert (mlp.shared_expert) scaled per token by sigmoid(mlp.shared_expert_gate
  // x); glm4_moe's (mlp.shared_experts) is not gated.
  bool shared_expert_gate = false;
  int64_t first_dense_layers = 0;  // glm4_moe first_k_dense_replace
  bool is_sparse(int64_t layer) const;
};

// Tensors a checkpoint holds that gradients never move: glm4_moe's e_score_correction_bias, which
// training moves by the experts' load instead (TrainerConfig::expert_bias_update).
bool is_buffer(const std::string& parameter_name);

// What the gemma, gemma2, gemma3_text, olmo2 and gpt_oss decoders change in the llama decoder
// (docs/models.md).
struct DecoderSwitches {
  bool norm_plus_one = false;     // gemma: RMSNorm scales by 1 + w
  bool pre_norms = true;          // a norm before attention and before the MLP (all but olmo2)
  bool post_norms = false;        // a norm on attention's and the MLP's output, before the residual add
  bool qk_norm_whole = false;     // olmo2: the q/k norms span the whole projection, not each head
  bool scale_embeddings = false;  // gemma: embeddings times sqrt(hidden_size), rounded to the dtype
  double attention_softcap = 0;   // gemma2: scores become cap * tanh(scores / cap); 0: none
  double final_logit_softcap = 0;
  double query_pre_attn_scalar = 0;     // gemma2, gemma3: scores scaled by its inverse square root
  std::string activation = "silu";      // the gated MLP's: silu, gelu_tanh or gelu
  std::vector<uint8_t> sliding_layers;  // per layer, 1 where sliding_window applies (empty: all)
  double local_rope_theta = 0;          // gemma3: sliding layers rotate with this base, unscaled
  bool attention_sinks = false;         // gpt_oss: a learned logit per head joins each softmax
  // qwen3_next: q_proj yields each head's queries and as many gate logits; the attention's output is
  // multiplied by their sigmoid before o_proj.
  bool attention_output_gate = false;
};

// Gated DeltaNet token mixers in place of attention on some layers (qwen3_next's linear_attention
// layers; docs/models.md): in-projections to q, k, v, the output gate z, beta's and the decay's logits;
// a short convolution with SiLU over q, k and v; q and k L2-normalized per head; the gated delta rule
// (linear_recurrence with beta = sigmoid(b) and one log-decay per head, -exp(A_log) softplus(a +
// dt_bias)); an RMSNorm of each head's output times silu(z); the out-projection.
struct GatedDeltaNetConfig {
  int64_t num_key_heads = 0, num_value_heads = 0, key_head_dim = 0, value_head_dim = 0, conv_kernel = 4;
  std::vector<uint8_t> layers;  // per layer, 1 where the mixer replaces attention (empty: on no layer)
  bool replaces_attention(int64_t layer) const { return !layers.empty() && layers[size_t(layer)]; }
  int64_t key_dim() const { return num_key_heads * key_head_dim; }
  int64_t value_dim() const { return num_value_heads * value_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // q, k, v convolved together
};

// Mamba-2's selective state space layers (mamba2; docs/models.md): in-projection to the gate z, the
// convolved x, B, C and dt; a short convolution; the SSD recurrence over a state of state_size per
// head dimension (linear_recurrence with one decay per head, dt A); the skip D x; a gated RMSNorm; the
// out-projection. intermediate_size = expand x hidden_size = num_heads x head_dim.
struct SsmConfig {
  int64_t state_size = 0;  // N; 0: not a state space model
  int64_t num_heads = 0, head_dim = 0, n_groups = 1, conv_kernel = 4;
  bool use_bias = false, use_conv_bias = true;
  bool residual_in_fp32 = true;  // the residual stream in f32 when the weights are 16-bit
  double time_step_min = 0.001, time_step_max = 0.1, time_step_floor = 1e-4;  // dt_bias's initialization
  double time_step_limit_low = 0, time_step_limit_high = 0;                   // dt clamped; 0, 0: none
  int64_t conv_dim() const { return num_heads * head_dim + 2 * n_groups * state_size; }
};

struct ModelConfig {
  std::string model_type;  // llama, mistral, qwen2, qwen3, mixtral, qwen3_moe, gpt_oss, glm4_moe,
                           // gemma, gemma2, gemma3_text, olmo2, qwen3_next, gpt2, mamba2
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0;
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  int64_t max_position_embeddings = 0;
  double norm_eps = 1e-6;
  RopeConfig rope;  // unused by gpt2 (learned positions)
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k, v (and o for llama) projections carry biases
  bool attention_output_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;        // qwen3 and others: RMSNorm of q and k before rope
  int64_t sliding_window = 0;  // 0 = full attention; on the layers sliding() names
  MoeConfig moe;
  DecoderSwitches decoder;
  SsmConfig ssm;                  // mamba2
  GatedDeltaNetConfig delta_net;  // qwen3_next
  // "gemma3" when the model is the text half of a gemma3 (image and text) config: its text_config,
  // the weights under language_model. or model.language_model., the image half left unread.
  std::string wrapper_type;
  bool sliding(int64_t layer) const {  // does sliding_window apply to this layer?
    return sliding_window > 0 && (decoder.sliding_layers.empty() || decoder.sliding_layers[size_t(layer)]);
  }
  std::string dtype = "float32";  // torch_dtype / dtype: what the checkpoint holds
  // Does layer `layer` attend (and keep keys and values)? Not mamba2's, nor qwen3_next's DeltaNet layers.
  bool attends(int64_t layer) const { return ssm.state_size == 0 && !delta_net.replaces_attention(layer); }
  // Does any layer carry a recurrent state (mamba2's, qwen3_next's Gated DeltaNet layers)?
  bool has_recurrent_layers() const {
    return ssm.state_size > 0 ||
           std::find(delta_net.layers.begin(), delta_net.layers.end(), 1) != delta_net.layers.end();
  }
};

// Parses config.json text; `source` names it in errors.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
ModelConfig read_model_config(const std::string& path);  // a config.json file

// The rotary inverse frequencies (rotary_dim / 2 values, f64) and the factor cos and sin are scaled
// by (yarn's attention factor; 1 otherwise), as transformers' modeling_rope_utils defines them, for
// a forward pass over sequences up to `sequence_length` positions (only `dynamic` depends on it).
struct RopeFrequencies {
  std::vector<double> inv_freq;
  double attention_factor = 1;
  int64_t rotary_dim = 0;
};
RopeFrequencies rope_frequencies(const ModelConfig& config, int64_t sequence_length);

// The keys and values of the tokens a model has seen, per layer: (B, S, Hkv, D) each, grown by every
// forward given the cache. The keys and values live in per-layer buffers written in place (NOTE [kv
// cache], causal_lm.cc), so a forward with a cache must not record gradients (run it under NoGrad).
// With padded rows, `segments` holds the cached positions' segment ids.
// A recurrent layer (mamba2's, qwen3_next's Gated DeltaNet) keeps no keys but its short convolution's
// last inputs and its recurrence's state, replaced by every forward given the cache; a hybrid keeps
// keys on its attention layers and states on the others.
struct KvCache {
  std::vector<Tensor> keys, values;  // per layer (B, capacity, Hkv, D); [0, length()) are cached
  std::vector<Tensor> conv_inputs;   // recurrent layers: (B, W-1, conv channels), the last W-1 inputs
  std::vector<Tensor> states;        // recurrent layers: (B, H, K, V) f32 (f64 for f64), linear_recurrence's
  Tensor segments;                   // (B, length()) i64, or undefined when no call was padded
  int64_t tokens = 0;
  int64_t length() const { return tokens; }
};

// How each layer's queries meet the keys and values: CausalLM::forward attends densely over a KvCache;
// a serving engine attends through its paged cache (src/serve). attend(layer, q (B,T,H,D), k and v
// (B,T,Hkv,D) of this call's tokens, the family's mask: causal, its window, padded rows' segments)
// -> (B,T,H,D).
// A recurrent layer's tokens meet their past through the same object (qwen3_next's Gated DeltaNet
// layers): mix(layer, h (B,T,C), mixer) -> the layer's output for h, where mixer(rows, cache, segments)
// runs the layer over `rows`, continuing and replacing `cache`'s convolution inputs and state at
// `layer` (null: from zeros), the state restarting where `segments` (or undefined) starts a document.
// CausalLM::forward continues its KvCache; the serving engine each sequence's own.
class LayerAttention {
 public:
  using RecurrentMixer = std::function<Tensor(const Tensor& rows, KvCache* cache, const Tensor& segments)>;
  virtual ~LayerAttention() = default;
  virtual Tensor attend(int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionOptions& mask) = 0;
  virtual Tensor mix(int64_t layer, const Tensor& h, const RecurrentMixer& mixer) = 0;
};

// Where a family's forward passes from one layer to the next (llama and its kin, gpt2, dit): enter(i,
// x) at layer i's start and enter(L, x) after the last, with the residual stream x; returns x, through
// an identity the tape may record. Parameter sharding (ZeRO-3, docs/parallel.md) gathers a layer's
// parameters there before it runs and releases the previous layer's.
class LayerBoundaries {
 public:
  virtual ~LayerBoundaries() = default;
  virtual Tensor enter(int64_t layer, const Tensor& x) = 0;
};
// The layer a parameter belongs to by its name ("model.layers.3.mlp.up_proj.weight": 3; gpt2's
// "h.N.", dit's "blocks.N."); -1 for the others (embeddings, final norm, head, a UNet's).
int64_t layer_of_parameter(const std::string& name);

// Megatron-style tensor parallelism over a group of ranks (docs/parallel.md): a llama-family model's
// attention heads and MLP hidden units split among the group — q, k, v, gate and up by rows (column
// parallel), o and down by columns (row parallel) — so each sub-block's output is a partial sum that
// reduce() adds over the group: one all-reduce per sub-block forward, and (copy(), at each sub-block's
// input) one in backward.
class TensorParallel {
 public:
  virtual ~TensorParallel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // x summed over the group, every rank the same bits; its gradient passes unchanged (Megatron's g).
  virtual Tensor reduce(const Tensor& x) = 0;
  // x itself; its gradient summed over the group (Megatron's f).
  virtual Tensor copy(const Tensor& x) = 0;
};
// How tensor parallelism splits a llama-family parameter: 0, by rows (q, k, v, gate, up and their
// biases); 1, by columns (o_proj, down_proj); -1, not at all (every rank holds it whole).
int tensor_parallel_dim(const std::string& name);
// Rank `rank` of `ranks`'s part of the whole tensor `name` (a parameter, or optimizer state of its
// shape): a slice along tensor_parallel_dim with bytes of its own, or `whole` itself when not split.
Tensor tensor_parallel_part(const std::string& name, const Tensor& whole, int64_t rank, int64_t ranks);

// Which parameters a model made or loaded here holds the values of (empty: all). The others are
// tensors of their shapes whose bytes are released (NOTE [released storage], tensor.h): parameter
// sharding (ZeRO-3) builds each rank's own parameters alone, so no rank ever holds the whole model.
using HeldParameters = std::function<bool(const std::string& name)>;

// How a model's to(dtype) makes each floating parameter of another dtype (name, tensor, dtype); empty:
// cast(). Parameter sharding casts the parameters a rank owns and defers the others' (deferred_cast).
using ParameterCast = std::function<Tensor(const std::string& name, const Tensor& t, DType dtype)>;

// What the routers of one forward did, for the router losses and the balance metrics (docs/moe.md).
// Padding (segment 0) is not counted.
struct RouterStats {
  std::vector<Tensor> probability_sums;             // per MoE layer: (E), Σ over tokens of softmax(router)
  std::vector<Tensor> z_sums;                       // per MoE layer: scalar, Σ logsumexp(router logits)²
  std::vector<std::vector<int64_t>> expert_tokens;  // per MoE layer: the tokens each expert took
  int64_t tokens = 0;                               // counted tokens per layer
};
// transformers' load_balancing_loss_func over the layers' routers taken together (the Switch and
// Mixtral form): E x Σ_e (share of the token-expert assignments to e) x (mean router probability of e);
// K with perfect balance. Differentiable through the probabilities; a scalar of the router's dtype.
Tensor load_balancing_loss(const RouterStats& stats);
// ST-MoE's router z-loss: the mean over tokens and layers of logsumexp(router logits)².
Tensor router_z_loss(const RouterStats& stats);

// A causal language model: config and parameters by Hugging Face name. forward() records onto the
// tape when parameters require gradients.
class CausalLM {
 public:
  // Random initialization (normal, std 0.02; norms at 1, biases at 0), streams named by `seed`.
  static CausalLM init(const ModelConfig& config, DType dtype, uint64_t seed,
                       const HeldParameters& held = {});
  // Reads config.json and the safetensors checkpoint of a Hugging Face model directory. Every tensor
  // the family needs must be present with its shape, and no unexpected one may be, before any is used.
  static CausalLM load(const std::string& directory, std::optional<DType> dtype = std::nullopt,
                       const HeldParameters& held = {});
  // Writes config.json and the tensors (sharded above max_shard_bytes) under their names; with
  // `by_rank`, this rank's part of a checkpoint sharded by ranks (save_safetensors_checkpoint).
  void save(const std::string& directory, uint64_t max_shard_bytes = 5'000'000'000,
            const RankShards* by_rank = nullptr) const;

  const ModelConfig& config() const { return config_; }
  const std::map<std::string, Tensor>& parameters() const { return parameters_; }
  int64_t parameter_count() const;  // elements of every parameter
  std::map<std::string, Tensor>& parameters() { return parameters_; }
  const Tensor& parameter(const std::string& name) const;
  CausalLM to(DType dtype, const ParameterCast& cast = {}) const;  // every floating parameter cast
  // Every parameter copied to `device`, as new leaves (requires_grad as the original's).
  CausalLM to(Device device) const;
  Device device() const;  // the parameters' device (cpu for a model without parameters)
  // Entered by every forward from now on, by this model and its copies (to()); not owned. Null: none.
  void set_layer_boundaries(LayerBoundaries* boundaries) { boundaries_ = boundaries; }
  // For inference: each attention layer's q, k and v weights (and biases), and each dense MLP's gate and
  // up, moved one after another into one tensor, the parameters becoming views of it (names, shapes and
  // values unchanged), so that a forward computes them by one wider product each (docs/serving.md);
  // gpt2's Conv1D weights (in, out) laid out as their (out, in) rows, the parameters their transposed
  // views, as the decode kernels read weights. A model whose parameters require gradients is refused;
  // mamba2 is left as it is. Then asks for every CPU parameter's memory in huge pages, which a decode
  // step's stream through every weight reads with fewer TLB misses (docs/serving.md).
  void pack_projections();
  // This rank's part of the model under tensor parallelism over `group` (not owned): every split
  // parameter's slice (tensor_parallel_dim) as a new tensor, the others shared; its forwards compute
  // their heads and hidden units and sum over the group. Refuses a model it does not cover (experts,
  // gpt2, sinks, olmo2's whole-projection norms) or sizes the group does not divide, by name.
  CausalLM tensor_shard(TensorParallel& group) const;

  // ids (B,T) i64 at positions (B,T) i64 (0-based) -> logits (B,T,V) in the parameters' dtype. With a
  // cache, the tokens attend to the cached ones too, and their keys and values join the cache
  // (incremental decoding: prefill once, then one token at a time).
  // `segments` (B,T) i64, optional: 0 marks padding, which no other token attends to and which sees
  // only padding (NOTE [padding], causal_lm.cc); a padded row's tokens get the logits they get alone.
  // With `router`, a mixture-of-experts model records what its routers did there (padding excluded).
  Tensor forward(const Tensor& ids, const Tensor& positions, KvCache* cache = nullptr,
                 const Tensor& segments = {}, RouterStats* router = nullptr) const;
  // The same through the caller's attention (no segments); with `logit_rows` (K) i64, the logits of
  // those positions only, (B,K,V): a server needs each sequence's last position, not the prompt's.
  Tensor forward(const Tensor& ids, const Tensor& positions, LayerAttention& attention,
                 const Tensor& logit_rows = {}) const;

 private:
  void check_ids_and_positions(const Tensor& ids, const Tensor& positions) const;
  Tensor run_family(const Tensor& ids, const Tensor& positions, LayerAttention& attention,
                    const AttentionOptions& mask, const Tensor& logit_rows, RouterStats* router) const;

  ModelConfig config_;
  std::string config_text_;  // config.json as read, written back but for its dtype (save())
  std::map<std::string, Tensor> parameters_;
  LayerBoundaries* boundaries_ = nullptr;
  TensorParallel* tensor_ = nullptr;  // tensor_shard()'s group
};

class Tokenizer;
// Writes a llama, mistral, qwen2 or qwen3 model and its (byte-level BPE) tokenizer as one GGUF file that
// llama.cpp loads, under llama.cpp's architecture and tensor names: matrices in `dtype` (f32, f16 or
// bf16), norms and biases in f32. A config llama.cpp cannot express in that architecture (rope scaling,
// a sliding window, partial rotary) is refused by name; the file is written whole or not at all.
void save_gguf(const CausalLM& model, const Tokenizer& tokenizer, const std::string& path, DType dtype);

// Choosing the next token from a row of logits, as transformers' generate does: the repetition
// penalty (OpenAI's presence and frequency penalties beside it, over the generated tokens: the last
// `step` of the history), then temperature, top-k, top-p and min-p, then a draw from what remains.
// temperature 0 is greedy (the first maximum). The draw's uniform number comes from Philox keyed by (seed,
// sequence, step): the same sequence draws the same tokens whatever else shares its batch.
struct SamplingOptions {
  double temperature = 1.0;
  int64_t top_k = 0;                // 0: off
  double top_p = 1.0;               // 1: off
  double min_p = 0.0;               // 0: off
  double repetition_penalty = 1.0;  // 1: off
  double presence_penalty = 0.0;    // subtracted once from each token generated so far, -2 to 2
  double frequency_penalty = 0.0;   // subtracted per occurrence among the generated tokens, -2 to 2
  uint64_t seed = 0;
};
int64_t sample_token(std::span<const float> logits, const SamplingOptions& options,
                     const std::vector<int64_t>& history, uint64_t sequence, uint64_t step);

// The most tokens one generate() call produces: past it a request is a mistake, not a continuation.
inline constexpr int64_t kMaxNewTokens = int64_t(1) << 20;

// Continues prompts with the KV cache: a prefill, then one token per step for every row, sampled by
// sample_token with the row's sequence id (so a prompt's tokens do not depend on its batch), until
// every row has produced an end-of-sequence id (kept in its output) or max_new_tokens. Prompts of
// different lengths are left-padded (NOTE [padding]): each row gets the tokens it gets alone.
struct GenerationOptions {
  int64_t max_new_tokens = 32;  // 1 to kMaxNewTokens
  SamplingOptions sampling;
  std::vector<int64_t> eos_ids;
  std::vector<uint64_t> sequence_ids;  // one per prompt; empty: 0 for every row
  // Called with each new token of a row still running, as it is chosen (streaming); returning false
  // ends that row there (a stop string was met).
  std::function<bool(int64_t row, int64_t token)> on_token;
};
std::vector<std::vector<int64_t>> generate(const CausalLM& model,
                                           const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerationOptions& options);

// The names and shapes a config's family needs, in checkpoint order.
std::vector<std::pair<std::string, Shape>> parameter_shapes(const ModelConfig& config);

}  // namespace dew
