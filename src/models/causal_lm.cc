// CausalLM: parameters by Hugging Face name — initialized, loaded from a checkpoint directory (every
// name and shape checked before any tensor is used), saved back, cast — and the family's forward.
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/safetensors.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/allocator.h"
#include "io/files.h"
#include "models/families.h"

namespace dew {
namespace {

// The parameters' bytes against the machine's memory, before any is allocated: a config of absurd
// sizes is refused by what it would need, not by the allocator partway through.
void require_memory_for(const std::vector<std::pair<std::string, Shape>>& shapes, DType dtype,
                        const std::string& what) {
  double elements = 0;
  for (const auto& [name, shape] : shapes) {
    double n = 1;
    for (const int64_t d : shape) n *= double(d);
    elements += n;
  }
  const double bytes = elements * double(dtype_size(dtype));
  const double memory = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  DEW_REQUIRE(bytes <= memory,
              "{}: its {:.3g} parameters need {:.1f} GiB in {}; this machine has {:.1f} GiB of memory", what,
              elements, bytes / double(1 << 30), dtype_name(dtype), memory / double(1 << 30));
}

bool is_gpt2(const ModelConfig& c) {
  return c.model_type == "gpt2";
}

bool is_mamba2(const ModelConfig& c) {
  return c.model_type == "mamba2";
}

// Buffers some checkpoints carry that are not parameters (recomputed from the config).
bool is_known_buffer(const std::string& name) {
  return name.ends_with("rotary_emb.inv_freq") || name.ends_with(".attn.bias") ||
         name.ends_with(".attn.masked_bias");
}

DType dtype_of_config(const ModelConfig& c) {
  if (c.dtype == "bfloat16") return DType::bf16;
  if (c.dtype == "float16") return DType::f16;
  if (c.dtype == "float64") return DType::f64;
  return DType::f32;
}

const char* torch_dtype_name(DType t) {
  switch (t) {
    case DType::bf16:
      return "bfloat16";
    case DType::f16:
      return "float16";
    case DType::f64:
      return "float64";
    default:
      return "float32";
  }
}

}  // namespace

namespace models {

const Tensor& parameter(const Parameters& p, const std::string& name) {
  auto it = p.find(name);
  DEW_REQUIRE(it != p.end(), "[model] has no parameter \"{}\"", name);
  return it->second;
}

}  // namespace models

std::vector<std::pair<std::string, Shape>> parameter_shapes(const ModelConfig& config) {
  if (is_mamba2(config)) return models::mamba2_parameter_shapes(config);
  return is_gpt2(config) ? models::gpt2_parameter_shapes(config) : models::llama_parameter_shapes(config);
}

const Tensor& CausalLM::parameter(const std::string& name) const {
  return models::parameter(parameters_, name);
}

namespace {

// A parameter this process does not hold (HeldParameters): its shape, no bytes.
Tensor not_held(const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  t.release_storage();
  return t;
}

}  // namespace

CausalLM CausalLM::init(const ModelConfig& config, DType dtype, uint64_t seed, const HeldParameters& held) {
  CausalLM m;
  m.config_ = config;
  m.config_.dtype = torch_dtype_name(dtype);
  const auto shapes = parameter_shapes(config);
  require_memory_for(shapes, dtype, "a " + config.model_type + " model");
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, shape] = shapes[i];
    if (held && !held(name)) {  // each parameter draws from its own stream: the others are unchanged
      m.parameters_[name] = not_held(shape, dtype);
      continue;
    }
    const bool is_norm = name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos;
    // Drawn in f64 and rounded once into `dtype` by the fill itself (as a cast of the f64 draws would).
    Tensor t;
    const RandomKey key{seed, uint64_t(i), 0};
    const std::optional<Tensor> family_value =
        is_mamba2(config)                  ? models::mamba2_initial_value(config, name, shape, dtype, key)
        : !config.delta_net.layers.empty() ? models::gated_delta_net_initial_value(name, shape, dtype, key)
                                           : std::nullopt;
    if (family_value)
      t = *family_value;
    else if (name.ends_with(".bias") || name.ends_with("_bias"))
      t = Tensor::zeros(shape, dtype);
    else if (is_norm)  // a norm scaling by 1 + w (gemma's, qwen3_next's) starts at w = 0
      t = Tensor::full(shape, config.decoder.norm_plus_one ? 0.0 : 1.0, dtype);
    else {
      // std 0.02 (transformers' initializer_range); GPT-2 scales residual projections by 1/sqrt(2L).
      double stddev = 0.02;
      if (is_gpt2(config) && name.ends_with("c_proj.weight"))
        stddev /= std::sqrt(2.0 * config.num_hidden_layers);
      t = Tensor::empty(shape, dtype);
      fill_normal(t, key, 0.0, stddev);
    }
    m.parameters_[name] = t;
  }
  m.config_text_ = models::model_config_json(m.config_);
  return m;
}

CausalLM CausalLM::load(const std::string& directory, std::optional<DType> dtype,
                        const HeldParameters& held) {
  namespace fs = std::filesystem;
  const std::string config_path = (fs::path(directory) / "config.json").string();
  CausalLM m;
  m.config_text_ = read_text_file(config_path);
  m.config_ = parse_model_config(m.config_text_, config_path);
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(directory);
  // Where the checkpoint keeps a parameter: GPT2LMHeadModel prefixes every name with "transformer.";
  // a gemma3 checkpoint keeps its text model under "language_model." (older) or "model.language_model."
  // (newer), beside the image half (vision_tower, multi_modal_projector), which is left unread.
  const bool gemma3 = m.config_.wrapper_type == "gemma3";
  const bool newer_gemma3 = gemma3 && checkpoint.find("model.language_model.embed_tokens.weight");
  const std::string prefix = is_gpt2(m.config_) && checkpoint.find("transformer.wte.weight") ? "transformer."
                             : gemma3 && !newer_gemma3 ? "language_model."
                                                       : std::string();
  const auto stored = [&](const std::string& name) {
    return newer_gemma3 && name.starts_with("model.") ? "model.language_model." + name.substr(6)
                                                      : prefix + name;
  };
  // Left unread as transformers leaves them: gemma3's image half; qwen3_next's multi-token prediction
  // head (mtp.), which only speculative decoding uses.
  const auto image_half = [&](const std::string& name) {
    return gemma3 &&
           (name.starts_with("vision_tower.") || name.starts_with("multi_modal_projector.") ||
            name.starts_with("model.vision_tower.") || name.starts_with("model.multi_modal_projector."));
  };
  const auto unread = [&](const std::string& name) {
    return image_half(name) || (m.config_.model_type == "qwen3_next" && name.starts_with("mtp."));
  };
  // Saved, the text model is a gemma3_text checkpoint of its own.
  if (gemma3) m.config_text_ = models::model_config_json(m.config_);
  const auto shapes = parameter_shapes(m.config_);
  std::vector<std::string> problems;
  std::set<std::string> expected;
  std::set<std::string> quantized;  // gpt-oss experts stored as MXFP4 blocks and scales
  for (const auto& [name, shape] : shapes) {
    const SafetensorsEntry* e = checkpoint.find(stored(name));
    if (!e && m.config_.moe.gpt_oss && checkpoint.find(name + "_blocks") &&
        checkpoint.find(name + "_scales")) {
      quantized.insert(name);
      expected.insert(name + "_blocks");
      expected.insert(name + "_scales");
      const Shape& b = checkpoint.find(name + "_blocks")->shape;  // (E, R, G, 16) decodes to (E, 32 G, R)
      if (b.size() != 4 || Shape{b[0], 32 * b[2], b[1]} != shape)
        problems.push_back(
            fmt::format("\"{}_blocks\" is {} (expected {} MXFP4 blocks of 16 bytes, decoding to {})", name,
                        shape_str(b), shape_str({shape[0], shape[2], shape[1] / 32}), shape_str(shape)));
      continue;
    }
    expected.insert(stored(name));
    if (!e)
      problems.push_back(fmt::format("\"{}\" is missing (expected {})", stored(name), shape_str(shape)));
    else if (e->shape != shape)
      problems.push_back(
          fmt::format("\"{}\" is {} (expected {})", stored(name), shape_str(e->shape), shape_str(shape)));
    else if (const std::optional<DType> t = safetensors_dtype(e->dtype); !t || !is_floating(*t))
      problems.push_back(fmt::format("\"{}\" holds {} (expected floating weights: F32, BF16, F16 or F64)",
                                     stored(name), e->dtype));
  }
  for (const std::string& name : checkpoint.names()) {
    const bool tied_head =
        m.config_.tie_word_embeddings && (name == "lm_head.weight" || name == prefix + "lm_head.weight");
    if (!expected.count(name) && !is_known_buffer(name) && !tied_head && !unread(name))
      problems.push_back(
          fmt::format("\"{}\" is not a parameter of this {} config", name, m.config_.model_type));
  }
  DEW_REQUIRE(problems.empty(), "{}: the checkpoint does not match config.json: {}", directory,
              fmt::join(problems, "; "));
  const DType target = dtype.value_or(dtype_of_config(m.config_));
  require_memory_for(shapes, target, directory);
  for (const auto& [name, shape] : shapes) {
    if (held && !held(name)) {
      m.parameters_[name] = not_held(shape, target);
      continue;
    }
    Tensor t = quantized.count(name) ? models::decode_mxfp4(checkpoint.load(name + "_blocks"),
                                                            checkpoint.load(name + "_scales"), name)
                                     : checkpoint.load(stored(name));
    m.parameters_[name] = as_dtype(t, target);  // every shape checked above
  }
  m.config_.dtype = torch_dtype_name(target);
  return m;
}

int64_t CausalLM::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, p] : parameters_) n += p.numel();
  return n;
}

void CausalLM::save(const std::string& directory, uint64_t max_shard_bytes, const RankShards* by_rank) const {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, shape] : parameter_shapes(config_)) tensors.push_back({name, parameter(name)});
  save_safetensors_checkpoint(directory, tensors, max_shard_bytes, by_rank);
  if (by_rank && by_rank->rank != 0) return;
  // config.json as it was read, but for the dtype field, which says what the weights now hold
  // (transformers reads torch_dtype, newer files dtype); a model loaded or cast to bf16 saves bf16.
  nlohmann::ordered_json json = nlohmann::ordered_json::parse(config_text_);
  const bool newer = json.contains("dtype") && !json.contains("torch_dtype");
  json[newer ? "dtype" : "torch_dtype"] = config_.dtype;
  json.erase("quantization_config");  // MXFP4 experts were decoded at load and are saved decoded
  const std::string text = json.dump(2) + "\n";
  AtomicFile config((std::filesystem::path(directory) / "config.json").string());
  config.write(text.data(), text.size());
  config.commit();
}

CausalLM CausalLM::to(DType dtype, const ParameterCast& cast_parameter) const {
  CausalLM m = *this;
  for (auto& [name, t] : m.parameters_)
    if (is_floating(t.dtype()) && t.dtype() != dtype)
      t = cast_parameter ? cast_parameter(name, t, dtype) : cast(t, dtype);
  m.config_.dtype = torch_dtype_name(dtype);
  return m;
}

CausalLM CausalLM::to(Device device) const {
  CausalLM m = *this;
  for (auto& [name, t] : m.parameters_) {
    const bool leaf_wants_grad = t.requires_grad();
    t = t.detach().to(device);
    if (leaf_wants_grad && is_floating(t.dtype())) t.requires_grad_();
  }
  return m;
}

Device CausalLM::device() const {
  return parameters_.empty() ? Device::cpu() : parameters_.begin()->second.device();
}

namespace models {

// Copies `count` positions of every row of `from` (B, *, Hkv, D), from its position 0, into `to` at
// position `at`; both contiguous.
void copy_rows(const Tensor& from, Tensor& to, int64_t at, int64_t count) {
  if (from.device().kind != Device::Kind::cpu) {  // on a GPU: one strided copy there
    to.slice(1, at, at + count).copy_from(from.slice(1, 0, count));
    return;
  }
  const size_t position_bytes = size_t(from.size(2) * from.size(3)) * dtype_size(from.dtype());
  const auto* source = static_cast<const unsigned char*>(from.raw_data());
  auto* target = static_cast<unsigned char*>(to.raw_data());
  for (int64_t b = 0; b < from.size(0); ++b)
    std::memcpy(target + size_t(b * to.size(1) + at) * position_bytes,
                source + size_t(b * from.size(1)) * position_bytes, size_t(count) * position_bytes);
}

// NOTE [kv cache]: each layer's keys and values go into a buffer with room to spare, written in place,
// and attention reads the view of its filled part. Growing by concatenation instead copied the whole
// cache, into fresh pages, at every token — most of a decode step's time at a few hundred tokens. The
// buffer doubles when full. Written in place, it cannot be differentiated through.
namespace {

std::pair<Tensor, Tensor> with_cache(KvCache* cache, int64_t layer, const Tensor& k, const Tensor& v) {
  if (!cache) return {k, v};
  DEW_REQUIRE(!k.requires_grad() && !v.requires_grad(),
              "[model] the KV cache is written in place and cannot be differentiated through; run forward "
              "with a cache under NoGrad (generation does)");
  if (int64_t(cache->keys.size()) <= layer) {
    cache->keys.resize(size_t(layer) + 1);
    cache->values.resize(size_t(layer) + 1);
  }
  const int64_t B = k.size(0), T = k.size(1), start = cache->tokens, filled = start + T;
  const auto append = [&](Tensor& buffer, const Tensor& x) {
    if (!buffer.defined() || buffer.size(1) < filled) {
      const int64_t at_least = (filled + 127) / 128 * 128;
      const int64_t capacity = std::max<int64_t>(at_least, buffer.defined() ? 2 * buffer.size(1) : 0);
      Tensor grown = Tensor::empty({B, capacity, x.size(2), x.size(3)}, x.dtype(), x.device());
      if (buffer.defined()) copy_rows(buffer, grown, 0, start);
      buffer = grown;
    }
    DEW_REQUIRE(buffer.dtype() == x.dtype() && buffer.size(0) == B,
                "[model] the cache holds {} for batch {}; this call brings {}", buffer.describe(),
                buffer.size(0), x.describe());
    copy_rows(x.contiguous(), buffer, start, T);
    buffer.bump_version();
  };
  append(cache->keys[size_t(layer)], k);
  append(cache->values[size_t(layer)], v);
  return {cache->keys[size_t(layer)].slice(1, 0, filled), cache->values[size_t(layer)].slice(1, 0, filled)};
}

// Attention over the layer's keys and values after the cached ones (the cache grown by them).
// A recurrent layer continues the cache's state, its documents restarting at `segments`.
class DenseAttention final : public LayerAttention {
 public:
  DenseAttention(KvCache* cache, Tensor segments) : cache_(cache), segments_(std::move(segments)) {}
  Tensor attend(int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionOptions& mask) override {
    const auto [keys, values] = with_cache(cache_, layer, k, v);
    return attention(q, keys, values, mask).out;
  }
  Tensor mix(int64_t, const Tensor& h, const RecurrentMixer& mixer) override {
    return mixer(h, cache_, segments_);
  }

 private:
  KvCache* cache_;
  Tensor segments_;
};

}  // namespace

int64_t cached_batch(const KvCache& cache) {
  for (const auto* per_layer : {&cache.keys, &cache.states})
    for (const Tensor& t : *per_layer)
      if (t.defined()) return t.size(0);
  return 0;
}

Tensor logit_positions(const Tensor& x, const Tensor& rows) {
  return rows.defined() ? index_select(x, 1, rows) : x;
}

}  // namespace models

// NOTE [padding]: rows of different lengths are left-padded to one length. Attention's segment ids
// keep the two apart: real tokens are segment 1 and padding 0, and a query sees only keys of its own
// segment, so a real token attends to exactly the keys it would see alone (positions come from the
// caller and start at 0 at the row's first real token). The cache keeps the keys' segment ids.
Tensor CausalLM::forward(const Tensor& ids, const Tensor& positions, KvCache* cache, const Tensor& segments,
                         RouterStats* router) const {
  check_ids_and_positions(ids, positions);
  DEW_REQUIRE(!segments.defined() || (segments.shape() == ids.shape() && segments.dtype() == DType::i64),
              "[model] segments is {}; expected i64 of the ids' shape {}", segments.describe(),
              shape_str(ids.shape()));
  if (cache) {
    const int64_t layers = int64_t(std::max(cache->keys.size(), cache->states.size())),
                  batch = models::cached_batch(*cache);
    DEW_REQUIRE(
        layers <= config_.num_hidden_layers && (batch == 0 || batch == ids.size(0)),
        "[model] the cache holds {} layers of batch {}; expected at most {} layers of the ids' batch {}",
        layers, batch, config_.num_hidden_layers, ids.size(0));
  }
  AttentionOptions mask;
  mask.causal = true;
  const bool cached_segments = cache && cache->segments.defined();
  if (segments.defined() || cached_segments) {
    const auto ones = [&](int64_t B, int64_t n) { return Tensor::full({B, n}, 1, DType::i64, ids.device()); };
    mask.q_segments = segments.defined() ? segments : ones(ids.size(0), ids.size(1));
    mask.k_segments = mask.q_segments;
    if (cache) {
      if (!cache->keys.empty())
        mask.k_segments = concat(
            {cached_segments ? cache->segments : ones(ids.size(0), cache->length()), mask.q_segments}, 1);
      cache->segments = mask.k_segments;
    }
  }
  models::DenseAttention dense(cache, mask.q_segments);
  Tensor logits = run_family(ids, positions, dense, mask, Tensor(), router);
  if (cache) cache->tokens += ids.size(1);  // every layer wrote at the same offset (with_cache)
  return logits;
}

Tensor CausalLM::forward(const Tensor& ids, const Tensor& positions, LayerAttention& attention,
                         const Tensor& logit_rows) const {
  check_ids_and_positions(ids, positions);
  DEW_REQUIRE(!logit_rows.defined() || (logit_rows.dim() == 1 && logit_rows.dtype() == DType::i64),
              "[model] logit_rows is {}; expected (K) i64 positions of the call", logit_rows.describe());
  AttentionOptions mask;
  mask.causal = true;
  return run_family(ids, positions, attention, mask, logit_rows, nullptr);
}

void CausalLM::pack_projections() {
  for (const auto& [name, t] : parameters_)
    DEW_REQUIRE(!t.requires_grad() && !t.storage_released(),
                "[model] pack_projections: {} {}; expected a model for inference (no parameter requiring a "
                "gradient, every one held)",
                name, t.requires_grad() ? "requires a gradient" : "is not held here");
  if (is_gpt2(config_))
    models::pack_gpt2_projections(config_, parameters_);
  else if (!is_mamba2(config_))
    models::pack_llama_projections(config_, parameters_);
  for (const auto& [name, t] : parameters_)
    if (t.device() == Device::cpu())
      detail::back_with_huge_pages(t.raw_data(), size_t(t.numel()) * dtype_size(t.dtype()));
}

Tensor CausalLM::run_family(const Tensor& ids, const Tensor& positions, LayerAttention& attention,
                            const AttentionOptions& mask, const Tensor& logit_rows,
                            RouterStats* router) const {
  if (is_gpt2(config_))
    for (double p : positions.to_f64_vector())
      DEW_REQUIRE(p >= 0 && p < double(config_.max_position_embeddings),
                  "[model] position {} is outside gpt2's {} learned positions", p,
                  config_.max_position_embeddings);
  if (is_mamba2(config_))  // no attention: each layer mixes through attention.mix
    return models::mamba2_forward(config_, parameters_, ids, attention, logit_rows, boundaries_);
  return is_gpt2(config_) ? models::gpt2_forward(config_, parameters_, ids, positions, attention, mask,
                                                 logit_rows, boundaries_)
                          : models::llama_forward(config_, parameters_, ids, positions, attention, mask,
                                                  logit_rows, boundaries_, router, tensor_);
}

void CausalLM::check_ids_and_positions(const Tensor& ids, const Tensor& positions) const {
  DEW_REQUIRE(ids.dim() == 2 && ids.dtype() == DType::i64, "[model] ids is {}; expected (B,T) i64",
              ids.describe());
  DEW_REQUIRE(positions.shape() == ids.shape() && positions.dtype() == DType::i64,
              "[model] positions is {}; expected i64 of the ids' shape {}", positions.describe(),
              shape_str(ids.shape()));
}

}  // namespace dew
