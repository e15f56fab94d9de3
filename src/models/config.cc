// config.json to ModelConfig, by model_type, with the defaults of transformers' config classes for
// fields a file may omit. Sizes are required; a field that changes the mathematics with a value
// Dew does not implement is refused by name (NOTE [refused config fields]).
#include <dew/models.h>

#include <algorithm>
#include <cmath>

#include "io/files.h"
#include "io/json.h"
#include "models/families.h"

namespace dew {
namespace {

// NOTE [refused config fields]: transformers reads many optional fields; those below change what
// the model computes. Each is accepted at the value Dew implements and refused otherwise (JsonFields::
// refuse_unless), so a checkpoint never runs as a different model than it is.
RopeConfig parse_rope(const JsonFields& f, double default_theta, double default_partial_rotary_factor) {
  RopeConfig r;
  // Newer files: rope_parameters holds rope_theta and the scaling; older: rope_theta + rope_scaling.
  const bool parameters = f.has("rope_parameters");
  r.theta = f.number_or("rope_theta", default_theta);
  // Beside rope_theta, or inside below.
  r.partial_rotary_factor = f.number_or("partial_rotary_factor", default_partial_rotary_factor);
  const char* key = parameters ? "rope_parameters" : "rope_scaling";
  if (!f.has(key)) return r;
  const nlohmann::json& s = f.json[key];
  DEW_REQUIRE(s.is_object(), "{}: \"{}\" is {}; expected an object", f.source, key, s.dump());
  const JsonFields g{s, f.source + " " + key};
  r.type = g.text_or("rope_type", g.text_or("type", "default"));
  if (parameters) r.theta = g.number_or("rope_theta", r.theta);
  r.partial_rotary_factor = g.number_or("partial_rotary_factor", r.partial_rotary_factor);
  g.refuse_unless("rope_type", r.type, {"default", "linear", "dynamic", "yarn", "llama3"},
                  "longrope, ntk and the others are not written yet");
  if (r.type == "default") return r;
  DEW_REQUIRE(g.has("factor"), "{}: rope type {} needs \"factor\"", g.source, r.type);
  r.factor = g.number_or("factor", 1);
  DEW_REQUIRE(r.factor >= 1, "{}: \"factor\" is {}; expected a number >= 1", g.source, r.factor);
  r.original_max_position_embeddings = g.size_or("original_max_position_embeddings", 0);
  if (r.type == "llama3") {
    r.low_freq_factor = g.number_or("low_freq_factor", 0);
    r.high_freq_factor = g.number_or("high_freq_factor", 0);
    DEW_REQUIRE(
        r.original_max_position_embeddings > 0 && r.high_freq_factor > r.low_freq_factor &&
            r.low_freq_factor > 0,
        "{}: llama3 needs original_max_position_embeddings and 0 < low_freq_factor < high_freq_factor",
        g.source);
  }
  if (r.type == "yarn") {
    if (g.has("attention_factor")) r.attention_factor = g.number_or("attention_factor", 1);
    if (g.has("mscale")) r.mscale = g.number_or("mscale", 1);
    if (g.has("mscale_all_dim")) r.mscale_all_dim = g.number_or("mscale_all_dim", 1);
    // transformers reads `get("beta_fast") or 32`: absent, null and 0 all mean the default.
    if (const double fast = g.number_or("beta_fast", 0); fast != 0) r.beta_fast = fast;
    if (const double slow = g.number_or("beta_slow", 0); slow != 0) r.beta_slow = slow;
    r.truncate = g.flag_or("truncate", true);
  }
  return r;
}

// mixtral, qwen3_moe, gpt_oss, glm4_moe and qwen3_next: the experts' fields, checked against the
// layers they name.
MoeConfig parse_moe(const JsonFields& f, const std::string& type, int64_t layers) {
  MoeConfig m;
  const bool mixtral = type == "mixtral", glm = type == "glm4_moe", next = type == "qwen3_next";
  m.gpt_oss = type == "gpt_oss";
  const char* experts_field = mixtral || m.gpt_oss ? "num_local_experts"
                              : glm                ? "n_routed_experts"
                                                   : "num_experts";
  // Qwen3NextConfig: 512 experts, 10 a token, renormalized, a gated shared expert; num_experts 0 makes
  // every MLP dense.
  const bool dense = next && f.has(experts_field) && f.json[experts_field] == 0;
  m.num_experts = dense ? 0 : f.size_or(experts_field, mixtral ? 8 : next ? 512 : 128);
  m.experts_per_token = f.size_or("num_experts_per_tok", mixtral ? 2 : m.gpt_oss ? 4 : next ? 10 : 8);
  if (next) {
    m.shared_expert_gate = true;
    m.shared_intermediate_size = f.size_or("shared_expert_intermediate_size", 512);
  }
  DEW_REQUIRE(m.experts_per_token <= m.num_experts || (next && m.num_experts == 0),
              "{}: num_experts_per_tok is {} but {} is {}; expected at most as many experts per token as "
              "there are experts",
              f.source, m.experts_per_token, experts_field, m.num_experts);
  m.intermediate_size = mixtral || m.gpt_oss ? f.size("intermediate_size")
                                             : f.size_or("moe_intermediate_size", next ? 512 : 768);
  m.normalize_top_k = mixtral || f.flag_or("norm_topk_prob", glm || next);
  m.router_losses = f.flag_or("output_router_logits", false);
  m.aux_loss_coef = f.number_or("router_aux_loss_coef", 0.001);
  m.z_loss_coef = f.number_or("router_z_loss_coef", 0);
  DEW_REQUIRE(m.aux_loss_coef >= 0 && m.z_loss_coef >= 0 && std::isfinite(m.aux_loss_coef + m.z_loss_coef),
              "{}: router_aux_loss_coef {} and router_z_loss_coef {}; expected numbers >= 0", f.source,
              m.aux_loss_coef, m.z_loss_coef);
  f.refuse_unless("router_jitter_noise", "0", {"0", "0.0"}, "multiplicative noise on the router's input");
  if (m.gpt_oss) {
    m.swiglu_alpha = f.number_or("swiglu_alpha", 1.702);
    m.swiglu_limit = f.number_or("swiglu_limit", 7.0);
    DEW_REQUIRE(m.swiglu_limit > 0 && std::isfinite(m.swiglu_alpha),
                "{}: swiglu_limit {} and swiglu_alpha {}; expected a positive limit and a finite alpha",
                f.source, m.swiglu_limit, m.swiglu_alpha);
  }
  if (mixtral || m.gpt_oss) return m;
  if (glm) {
    m.sigmoid_scores = true;
    m.groups = f.size_or("n_group", 1);
    m.groups_kept = f.size_or("topk_group", 1);
    m.routed_scaling = f.number_or("routed_scaling_factor", 1.0);
    m.shared_intermediate_size = m.intermediate_size * f.size_or("n_shared_experts", 1);
    const double first_dense = f.number_or("first_k_dense_replace", 1);
    m.first_dense_layers = int64_t(first_dense);
    DEW_REQUIRE(double(m.first_dense_layers) == first_dense,
                "{}: first_k_dense_replace is {}; expected a layer count", f.source, first_dense);
    DEW_REQUIRE(
        m.num_experts % m.groups == 0 && m.num_experts / m.groups >= 2 && m.groups_kept <= m.groups &&
            m.experts_per_token <= m.groups_kept * (m.num_experts / m.groups),
        "{}: n_routed_experts {}, n_group {}, topk_group {}, num_experts_per_tok {}; expected groups of "
        "at least 2 experts dividing the experts, topk_group <= n_group, and enough experts in the "
        "kept groups for every token",
        f.source, m.num_experts, m.groups, m.groups_kept, m.experts_per_token);
    DEW_REQUIRE(
        m.first_dense_layers >= 0 && m.first_dense_layers <= layers && m.routed_scaling > 0,
        "{}: first_k_dense_replace {} and routed_scaling_factor {}; expected 0 to {} layers and a positive "
        "factor",
        f.source, m.first_dense_layers, m.routed_scaling, layers);
    return m;
  }
  m.sparse_step = f.size_or("decoder_sparse_step", 1);
  if (f.has("mlp_only_layers")) {
    const nlohmann::json& list = f.json["mlp_only_layers"];
    DEW_REQUIRE(list.is_array(), "{}: \"mlp_only_layers\" is {}; expected a list of layer indices", f.source,
                list.dump());
    for (const nlohmann::json& i : list) {
      DEW_REQUIRE(i.is_number_integer() && i.get<int64_t>() >= 0 && i.get<int64_t>() < layers,
                  "{}: \"mlp_only_layers\" holds {}; expected layer indices from 0 to {}", f.source, i.dump(),
                  layers - 1);
      m.dense_layers.push_back(i.get<int64_t>());
    }
  }
  return m;
}

bool is_gemma(const std::string& type) {
  return type == "gemma" || type == "gemma2" || type == "gemma3_text";
}

// Which layers are of `kind` rather than full attention (gemma2's, gemma3_text's and gpt_oss's sliding
// layers, qwen3_next's linear_attention ones), from `layer_types`, else every layer but each
// `pattern`-th (gemma2 and gpt_oss alternate, 2; gemma3 keeps every sixth global, qwen3_next every
// fourth).
std::vector<uint8_t> parse_layer_types(const JsonFields& f, int64_t layers, int64_t pattern,
                                       const std::string& kind = "sliding_attention") {
  std::vector<uint8_t> of_kind;
  if (f.has("layer_types")) {
    const nlohmann::json& list = f.json["layer_types"];
    DEW_REQUIRE(list.is_array() && int64_t(list.size()) == layers,
                "{}: \"layer_types\" is {}; expected a list of {} entries (num_hidden_layers)", f.source,
                list.dump(), layers);
    for (const nlohmann::json& t : list) {
      DEW_REQUIRE(t == kind || t == "full_attention",
                  "{}: \"layer_types\" holds {}; expected \"{}\" or \"full_attention\"", f.source, t.dump(),
                  kind);
      of_kind.push_back(t == kind);
    }
    return of_kind;
  }
  for (int64_t i = 0; i < layers; ++i) of_kind.push_back((i + 1) % pattern != 0);
  return of_kind;
}

// gpt_oss: biases on every projection, sinks, alternating windows, and MXFP4 as the only quantization.
void parse_gpt_oss(const JsonFields& f, ModelConfig& c) {
  c.attention_bias = c.attention_output_bias = f.flag_or("attention_bias", true);
  c.decoder.attention_sinks = true;
  c.sliding_window = f.has("sliding_window") ? f.size("sliding_window") : 128;
  c.decoder.sliding_layers = parse_layer_types(f, c.num_hidden_layers, 2);
  if (f.has("quantization_config")) {
    const nlohmann::json& q = f.json["quantization_config"];
    const JsonFields g{q, f.source + " quantization_config"};
    DEW_REQUIRE(q.is_object(), "{}: \"quantization_config\" is {}; expected an object", f.source, q.dump());
    g.refuse_unless("quant_method", "", {"mxfp4"}, "expert weights are decoded from MXFP4 at load");
  }
  // GptOssConfig's rope when the file names none: yarn, factor 32 over 4,096 positions.
  if (!f.has("rope_scaling") && !f.has("rope_parameters")) {
    c.rope.type = "yarn";
    c.rope.factor = 32;
    c.rope.original_max_position_embeddings = 4096;
    c.rope.truncate = false;
  }
}

// qwen3_next: per-head q/k norms and every norm scaling by 1 + w, the attention's output gate, and
// Gated DeltaNet in place of attention on every layer but each full_attention_interval-th (or where
// layer_types says linear_attention).
void parse_qwen3_next(const JsonFields& f, ModelConfig& c) {
  c.attention_bias = c.attention_output_bias = f.flag_or("attention_bias", false);
  c.qk_norm = c.decoder.norm_plus_one = c.decoder.attention_output_gate = true;
  f.refuse_unless("use_sliding_window", "false", {"false"}, "per-layer sliding windows");
  GatedDeltaNetConfig& g = c.delta_net;
  g.num_key_heads = f.size_or("linear_num_key_heads", 16);
  g.num_value_heads = f.size_or("linear_num_value_heads", 32);
  g.key_head_dim = f.size_or("linear_key_head_dim", 128);
  g.value_head_dim = f.size_or("linear_value_head_dim", 128);
  g.conv_kernel = f.size_or("linear_conv_kernel_dim", 4);
  DEW_REQUIRE(g.num_value_heads % g.num_key_heads == 0,
              "{}: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}", f.source,
              g.num_value_heads, g.num_key_heads);
  g.layers =
      parse_layer_types(f, c.num_hidden_layers, f.size_or("full_attention_interval", 4), "linear_attention");
}

// gemma, gemma2, gemma3_text and olmo2: the switches of DecoderSwitches, by family.
void parse_decoder_switches(const JsonFields& f, ModelConfig& c) {
  const std::string& type = c.model_type;
  DecoderSwitches& d = c.decoder;
  if (type == "olmo2") {
    d.pre_norms = false;
    d.post_norms = true;
    c.qk_norm = d.qk_norm_whole = true;
    c.attention_bias = c.attention_output_bias = f.flag_or("attention_bias", false);
    return;
  }
  d.norm_plus_one = d.scale_embeddings = true;
  // Gemma 1 files name "gelu" in hidden_act and transformers runs the tanh form unless
  // hidden_activation says otherwise.
  const std::string activation = f.text_or("hidden_activation", "gelu_pytorch_tanh");
  f.refuse_unless("hidden_activation", "gelu_pytorch_tanh", {"gelu_pytorch_tanh", "gelu_new", "gelu"},
                  "the MLP is GeGLU");
  d.activation = activation == "gelu" ? "gelu" : "gelu_tanh";
  c.attention_bias = c.attention_output_bias = f.flag_or("attention_bias", false);
  if (type == "gemma") return;
  d.post_norms = true;
  d.query_pre_attn_scalar = f.number_or("query_pre_attn_scalar", 256);
  d.attention_softcap = f.number_or("attn_logit_softcapping", type == "gemma2" ? 50.0 : 0.0);
  d.final_logit_softcap = f.number_or("final_logit_softcapping", type == "gemma2" ? 30.0 : 0.0);
  DEW_REQUIRE(
      d.query_pre_attn_scalar > 0 && d.attention_softcap >= 0 && d.final_logit_softcap >= 0,
      "{}: query_pre_attn_scalar {}, attn_logit_softcapping {}, final_logit_softcapping {}; expected a "
      "positive scalar and softcaps >= 0 (or null)",
      f.source, d.query_pre_attn_scalar, d.attention_softcap, d.final_logit_softcap);
  c.sliding_window = f.has("sliding_window") ? f.size("sliding_window") : 4096;
  d.sliding_layers = parse_layer_types(f, c.num_hidden_layers,
                                       type == "gemma2" ? 2 : f.size_or("sliding_window_pattern", 6));
  if (type == "gemma3_text") {
    c.qk_norm = true;
    d.local_rope_theta = f.number_or("rope_local_base_freq", 10000);
  }
}

ModelConfig parse_llama_family(const JsonFields& f, const std::string& type) {
  ModelConfig c;
  c.model_type = type;
  // Sizes are required, but for gemma3_text: gemma3 files name only what differs from
  // Gemma3TextConfig's defaults in their text_config.
  const bool gemma3 = type == "gemma3_text";
  const auto sized = [&](const char* key, int64_t gemma3_default) {
    return gemma3 ? f.size_or(key, gemma3_default) : f.size(key);
  };
  c.vocab_size = sized("vocab_size", 262208);
  c.hidden_size = sized("hidden_size", 2304);
  c.intermediate_size = sized("intermediate_size", 9216);
  c.num_hidden_layers = sized("num_hidden_layers", 26);
  c.num_attention_heads = sized("num_attention_heads", 8);
  c.num_key_value_heads = f.size_or("num_key_value_heads", gemma3 ? 4 : c.num_attention_heads);
  // The config classes' defaults.
  const bool next = type == "qwen3_next";
  c.head_dim = f.size_or("head_dim", type == "qwen3"          ? 128
                                     : is_gemma(type) || next ? 256
                                     : type == "gpt_oss"      ? 64
                                                              : c.hidden_size / c.num_attention_heads);
  c.max_position_embeddings = f.size_or("max_position_embeddings", next ? 32768 : 2048);
  c.norm_eps = f.number_or(
      "rms_norm_eps",
      type == "mixtral" || type == "olmo2" || type == "gpt_oss" || type == "glm4_moe" ? 1e-5 : 1e-6);
  c.tie_word_embeddings = f.flag_or("tie_word_embeddings", is_gemma(type));
  c.rope = parse_rope(f,
                      type == "mixtral" || type == "gemma3_text" ? 1e6
                      : type == "gpt_oss"                        ? 150000
                                                                 : 10000,
                      // Glm4MoeConfig rotates half of each head, Qwen3NextConfig a quarter
                      type == "glm4_moe" ? 0.5
                      : next             ? 0.25
                                         : 1.0);
  if (type == "mixtral" || type == "qwen3_moe" || type == "gpt_oss" || type == "glm4_moe" || next)
    c.moe = parse_moe(f, type, c.num_hidden_layers);
  DEW_REQUIRE(c.num_attention_heads % c.num_key_value_heads == 0,
              "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", f.source,
              c.num_attention_heads, c.num_key_value_heads);
  // gemma's MLP is GeGLU, by hidden_activation (parse_decoder_switches); every other one SwiGLU.
  if (!is_gemma(type)) f.refuse_unless("hidden_act", "silu", {"silu"}, "the MLP is SwiGLU");
  if (is_gemma(type) || type == "olmo2") {
    parse_decoder_switches(f, c);
    return c;
  }
  if (type == "gpt_oss") {
    parse_gpt_oss(f, c);
    return c;
  }
  if (next) {
    parse_qwen3_next(f, c);
    return c;
  }
  if (type == "glm4_moe") {  // q, k, v biases (not o), optional per-head q/k norms, partial rotary
    c.attention_bias = f.flag_or("attention_bias", false);
    c.qk_norm = f.flag_or("use_qk_norm", false);
    return c;
  }
  if (type == "llama") {
    c.attention_bias = c.attention_output_bias = f.flag_or("attention_bias", false);
    c.mlp_bias = f.flag_or("mlp_bias", false);
  } else if (type == "qwen2") {
    c.attention_bias = true;  // q, k, v carry biases; o does not
    f.refuse_unless("use_sliding_window", "false", {"false"}, "per-layer sliding windows");
  } else if (type == "qwen3" || type == "qwen3_moe") {
    c.attention_bias = c.attention_output_bias = f.flag_or("attention_bias", false);
    c.qk_norm = true;
    f.refuse_unless("use_sliding_window", "false", {"false"}, "per-layer sliding windows");
  } else if (type == "mixtral") {
    c.sliding_window = f.has("sliding_window") ? f.size("sliding_window") : 0;  // MixtralConfig: None
  } else if (type == "mistral") {
    // Absent: MistralConfig's default of 4096; null: full attention (Mistral 7B v0.2 and later).
    c.sliding_window = !f.json.contains("sliding_window") ? 4096
                       : f.has("sliding_window")          ? f.size("sliding_window")
                                                          : 0;
  }
  return c;
}

// mamba2: Mamba2Config's fields and defaults.
ModelConfig parse_mamba2(const JsonFields& f) {
  ModelConfig c;
  c.model_type = "mamba2";
  SsmConfig& s = c.ssm;
  c.vocab_size = f.size_or("vocab_size", 32768);
  c.hidden_size = f.size_or("hidden_size", 4096);
  c.num_hidden_layers = f.size_or("num_hidden_layers", 64);
  s.state_size = f.size_or("state_size", 128);
  s.num_heads = f.size_or("num_heads", 128);
  s.head_dim = f.size_or("head_dim", 64);
  s.n_groups = f.size_or("n_groups", 8);
  s.conv_kernel = f.size_or("conv_kernel", 4);
  const int64_t expand = f.size_or("expand", 2);
  c.intermediate_size = expand * c.hidden_size;
  c.norm_eps = f.number_or("layer_norm_epsilon", 1e-5);
  c.tie_word_embeddings = f.flag_or("tie_word_embeddings", false);
  s.use_bias = f.flag_or("use_bias", false);
  s.use_conv_bias = f.flag_or("use_conv_bias", true);
  s.residual_in_fp32 = f.flag_or("residual_in_fp32", true);
  s.time_step_min = f.number_or("time_step_min", 0.001);
  s.time_step_max = f.number_or("time_step_max", 0.1);
  s.time_step_floor = f.number_or("time_step_floor", 1e-4);
  c.max_position_embeddings = 0;  // a recurrence has no context limit
  f.refuse_unless("hidden_act", "silu", {"silu", "swish"},
                  "the convolution's and the gate's activation is SiLU");
  f.refuse_unless("rms_norm", "true", {"true"}, "the mixer's output norm is a gated RMSNorm");
  if (f.has("time_step_limit")) {
    const nlohmann::json& limit = f.json["time_step_limit"];
    DEW_REQUIRE(limit.is_array() && limit.size() == 2 && limit[0].is_number() && limit[1].is_number(),
                "{}: time_step_limit is {}; expected [low, high], two numbers", f.source, limit.dump());
    s.time_step_limit_low = limit[0].get<double>();
    s.time_step_limit_high = limit[1].get<double>();
    DEW_REQUIRE(s.time_step_limit_low >= 0 && s.time_step_limit_high > s.time_step_limit_low,
                "{}: time_step_limit is {}; expected 0 <= low < high", f.source, limit.dump());
  }
  DEW_REQUIRE(s.num_heads * s.head_dim == c.intermediate_size,
              "{}: num_heads {} x head_dim {} is {}; expected expand x hidden_size = {}", f.source,
              s.num_heads, s.head_dim, s.num_heads * s.head_dim, c.intermediate_size);
  DEW_REQUIRE(s.num_heads % s.n_groups == 0, "{}: num_heads {} is not a multiple of n_groups {}", f.source,
              s.num_heads, s.n_groups);
  DEW_REQUIRE(
      s.time_step_min > 0 && s.time_step_max >= s.time_step_min && s.time_step_floor >= 0,
      "{}: time_step_min {}, time_step_max {}, time_step_floor {}; expected 0 < min <= max and floor >= 0",
      f.source, s.time_step_min, s.time_step_max, s.time_step_floor);
  return c;
}

ModelConfig parse_gpt2(const JsonFields& f) {
  ModelConfig c;
  c.model_type = "gpt2";
  c.vocab_size = f.size("vocab_size");
  c.hidden_size = f.size_or("n_embd", 768);
  c.num_hidden_layers = f.size_or("n_layer", 12);
  c.num_attention_heads = c.num_key_value_heads = f.size_or("n_head", 12);
  c.head_dim = c.hidden_size / c.num_attention_heads;
  c.intermediate_size = f.size_or("n_inner", 4 * c.hidden_size);
  c.max_position_embeddings = f.size_or("n_positions", 1024);
  c.norm_eps = f.number_or("layer_norm_epsilon", 1e-5);
  c.tie_word_embeddings = f.flag_or("tie_word_embeddings", true);
  c.attention_bias = c.attention_output_bias = c.mlp_bias = true;
  f.refuse_unless("activation_function", "gelu_new", {"gelu_new", "gelu_pytorch_tanh"},
                  "the MLP is tanh-GELU");
  f.refuse_unless("scale_attn_weights", "true", {"true"}, "scores are scaled by 1/sqrt(D)");
  f.refuse_unless("scale_attn_by_inverse_layer_idx", "false", {"false"}, "no per-layer score scaling");
  f.refuse_unless("add_cross_attention", "false", {"false"}, "Dew's gpt2 is decoder-only");
  DEW_REQUIRE(c.hidden_size % c.num_attention_heads == 0, "{}: n_embd {} is not a multiple of n_head {}",
              f.source, c.hidden_size, c.num_attention_heads);
  return c;
}

// Values no model computes with, refused by field before anything is sized from them (an op's
// error deep inside the first forward would name neither the file nor the field).
void check_values(const ModelConfig& c, const JsonFields& f) {
  const bool gpt2 = c.model_type == "gpt2", mamba2 = c.model_type == "mamba2";
  // Sizes past any model's, refused before a table of parameters is laid out from them.
  const auto at_most = [&](const char* field, int64_t value, int64_t limit) {
    DEW_REQUIRE(value <= limit, "{}: {} is {}; expected at most {} (no model has more)", f.source, field,
                value, limit);
  };
  at_most(gpt2 ? "n_layer" : "num_hidden_layers", c.num_hidden_layers, 10'000);
  at_most(gpt2 ? "n_head" : "num_attention_heads", c.num_attention_heads, 65'536);
  at_most("num_heads", c.ssm.num_heads, 65'536);
  at_most("state_size", c.ssm.state_size, 65'536);
  at_most("conv_kernel", c.ssm.conv_kernel, 1024);
  at_most("linear_conv_kernel_dim", c.delta_net.conv_kernel, 1024);
  at_most("linear_num_value_heads", c.delta_net.num_value_heads, 65'536);
  at_most("linear_key_head_dim", c.delta_net.key_head_dim, 65'536);
  at_most("linear_value_head_dim", c.delta_net.value_head_dim, 65'536);
  at_most(gpt2 ? "n_embd" : "hidden_size", c.hidden_size, int64_t(1) << 22);
  at_most(gpt2 ? "n_inner" : "intermediate_size", c.intermediate_size, int64_t(1) << 24);
  at_most("head_dim", c.head_dim, 65'536);
  at_most("vocab_size", c.vocab_size, int64_t(1) << 28);
  at_most(gpt2 ? "n_positions" : "max_position_embeddings", c.max_position_embeddings, int64_t(1) << 28);
  DEW_REQUIRE(c.norm_eps > 0 && std::isfinite(c.norm_eps), "{}: {} is {}; expected a positive number",
              f.source, gpt2 ? "layer_norm_epsilon" : "rms_norm_eps", c.norm_eps);
  if (!gpt2 && !mamba2) {  // gpt2 learns its positions; mamba2 has none
    DEW_REQUIRE(c.rope.theta > 0 && std::isfinite(c.rope.theta),
                "{}: rope_theta is {}; expected a positive number", f.source, c.rope.theta);
    const double factor = c.rope.partial_rotary_factor;
    DEW_REQUIRE(factor > 0 && factor <= 1, "{}: partial_rotary_factor is {}; expected a number in (0, 1]",
                f.source, factor);
    const int64_t rotary = int64_t(double(c.head_dim) * factor);  // as transformers rounds it
    DEW_REQUIRE(
        rotary >= 2 && rotary % 2 == 0,
        "{}: head_dim {} (hidden_size {} / num_attention_heads {}, or head_dim) times partial_rotary_factor "
        "{} gives {} rotary dimensions; expected an even number, at least 2",
        f.source, c.head_dim, c.hidden_size, c.num_attention_heads, factor, rotary);
  }
  DEW_REQUIRE(
      c.dtype == "float32" || c.dtype == "bfloat16" || c.dtype == "float16" || c.dtype == "float64",
      "{}: torch_dtype \"{}\" is not a dtype Dew reads; expected float32, bfloat16, float16 or float64",
      f.source, c.dtype);
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  const nlohmann::json json = parse_json(json_text, source);
  DEW_REQUIRE(json.is_object(), "{}: expected a JSON object", source);
  const JsonFields f{json, source};
  const std::string type = f.text_or("model_type", "");
  ModelConfig c;
  if (type == "gemma3") {  // the text half of an image and text model
    DEW_REQUIRE(f.has("text_config") && json["text_config"].is_object(),
                "{}: a gemma3 config needs \"text_config\" (an object); Dew runs its text model", source);
    const std::string text_source = source + " text_config";
    c = parse_llama_family(JsonFields{json["text_config"], text_source}, "gemma3_text");
    c.wrapper_type = "gemma3";
    c.dtype = f.text_or("dtype", f.text_or("torch_dtype", "float32"));
    check_values(c, JsonFields{json["text_config"], text_source});
    return c;
  }
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3" || type == "mixtral" ||
      type == "qwen3_moe" || type == "gpt_oss" || type == "glm4_moe" || is_gemma(type) || type == "olmo2" ||
      type == "qwen3_next")
    c = parse_llama_family(f, type);
  else if (type == "gpt2")
    c = parse_gpt2(f);
  else if (type == "mamba2")
    c = parse_mamba2(f);
  else
    fail(
        "{}: model_type \"{}\" is not a family Dew has; expected llama, mistral, qwen2, qwen3, mixtral, "
        "qwen3_moe, gpt_oss, glm4_moe, gemma, gemma2, gemma3_text, gemma3, olmo2, qwen3_next, gpt2 or mamba2",
        source, type);
  c.dtype = f.text_or("dtype", f.text_or("torch_dtype", "float32"));
  check_values(c, f);
  return c;
}

ModelConfig read_model_config(const std::string& path) {
  return parse_model_config(read_text_file(path), path);
}

bool MoeConfig::is_sparse(int64_t layer) const {
  return num_experts > 0 && layer >= first_dense_layers && (layer + 1) % sparse_step == 0 &&
         std::find(dense_layers.begin(), dense_layers.end(), layer) == dense_layers.end();
}

bool is_buffer(const std::string& parameter_name) {
  return parameter_name.ends_with(".e_score_correction_bias");
}

}  // namespace dew
