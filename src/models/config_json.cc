// config.json text for a ModelConfig (families.h model_config_json): the fields transformers needs to
// build the same model, every default Dew assumed written out, so a file Dew writes reads back as the
// model it describes (tests/models/model_test.cc, AWrittenConfigReadsBackAsTheSameModel).
#include <dew/models.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/families.h"

namespace dew {
namespace models {
namespace {

// layer_types: `kind` where the flag is set, full_attention elsewhere (config.cc's parse_layer_types).
std::vector<std::string> layer_types(const std::vector<uint8_t>& of_kind, const char* kind) {
  std::vector<std::string> types;
  for (const uint8_t k : of_kind) types.push_back(k ? kind : "full_attention");
  return types;
}

}  // namespace

std::string model_config_json(const ModelConfig& c) {
  nlohmann::ordered_json j;
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  if (c.model_type == "mamba2") {
    const SsmConfig& s = c.ssm;
    j["architectures"] = {"Mamba2ForCausalLM"};
    j["hidden_size"] = c.hidden_size;
    j["num_hidden_layers"] = c.num_hidden_layers;
    j["state_size"] = s.state_size;
    j["num_heads"] = s.num_heads;
    j["head_dim"] = s.head_dim;
    j["n_groups"] = s.n_groups;
    j["conv_kernel"] = s.conv_kernel;
    j["expand"] = c.intermediate_size / c.hidden_size;
    j["layer_norm_epsilon"] = c.norm_eps;
    j["use_bias"] = s.use_bias;
    j["use_conv_bias"] = s.use_conv_bias;
    j["residual_in_fp32"] = s.residual_in_fp32;
    j["hidden_act"] = "silu";
    j["rms_norm"] = true;
    j["time_step_min"] = s.time_step_min;
    j["time_step_max"] = s.time_step_max;
    j["time_step_floor"] = s.time_step_floor;
    if (s.time_step_limit_high > 0) j["time_step_limit"] = {s.time_step_limit_low, s.time_step_limit_high};
  } else if (c.model_type == "gpt2") {
    j["architectures"] = {"GPT2LMHeadModel"};
    j["n_embd"] = c.hidden_size;
    j["n_layer"] = c.num_hidden_layers;
    j["n_head"] = c.num_attention_heads;
    j["n_inner"] = c.intermediate_size;
    j["n_positions"] = c.max_position_embeddings;
    j["layer_norm_epsilon"] = c.norm_eps;
    j["activation_function"] = "gelu_new";
  } else {
    static const std::map<std::string, std::string> architecture = {
        {"llama", "LlamaForCausalLM"},         {"mistral", "MistralForCausalLM"},
        {"qwen2", "Qwen2ForCausalLM"},         {"qwen3", "Qwen3ForCausalLM"},
        {"mixtral", "MixtralForCausalLM"},     {"qwen3_moe", "Qwen3MoeForCausalLM"},
        {"gemma", "GemmaForCausalLM"},         {"gemma2", "Gemma2ForCausalLM"},
        {"gemma3_text", "Gemma3ForCausalLM"},  {"olmo2", "Olmo2ForCausalLM"},
        {"gpt_oss", "GptOssForCausalLM"},      {"glm4_moe", "Glm4MoeForCausalLM"},
        {"qwen3_next", "Qwen3NextForCausalLM"}};
    j["architectures"] = {architecture.at(c.model_type)};
    j["hidden_size"] = c.hidden_size;
    j["intermediate_size"] = c.intermediate_size;
    j["num_hidden_layers"] = c.num_hidden_layers;
    j["num_attention_heads"] = c.num_attention_heads;
    j["num_key_value_heads"] = c.num_key_value_heads;
    j["head_dim"] = c.head_dim;
    j["max_position_embeddings"] = c.max_position_embeddings;
    j["rms_norm_eps"] = c.norm_eps;
    const DecoderSwitches& d = c.decoder;
    if (d.activation == "silu") {
      j["hidden_act"] = "silu";
    } else {
      j["hidden_activation"] = d.activation == "gelu" ? "gelu" : "gelu_pytorch_tanh";
    }
    if (d.query_pre_attn_scalar > 0) {  // gemma2, gemma3_text
      j["query_pre_attn_scalar"] = d.query_pre_attn_scalar;
      j["attn_logit_softcapping"] =
          d.attention_softcap > 0 ? nlohmann::ordered_json(d.attention_softcap) : nlohmann::ordered_json();
      j["final_logit_softcapping"] = d.final_logit_softcap > 0 ? nlohmann::ordered_json(d.final_logit_softcap)
                                                               : nlohmann::ordered_json();
    }
    if (!d.sliding_layers.empty()) {  // gemma2, gemma3_text, gpt_oss
      j["sliding_window"] = c.sliding_window;
      j["layer_types"] = layer_types(d.sliding_layers, "sliding_attention");
    }
    if (d.local_rope_theta > 0) j["rope_local_base_freq"] = d.local_rope_theta;
    const bool next = c.model_type == "qwen3_next";
    if (c.model_type.starts_with("gemma") || c.model_type == "olmo2" || c.model_type == "gpt_oss" ||
        c.model_type == "glm4_moe" || next)
      j["attention_bias"] = c.attention_bias;
    j["rope_theta"] = c.rope.theta;
    j["partial_rotary_factor"] =
        c.rope.partial_rotary_factor;  // always: glm4_moe's and qwen3_next's default is not 1
    if (next) {
      const GatedDeltaNetConfig& g = c.delta_net;
      j["linear_num_key_heads"] = g.num_key_heads;
      j["linear_num_value_heads"] = g.num_value_heads;
      j["linear_key_head_dim"] = g.key_head_dim;
      j["linear_value_head_dim"] = g.value_head_dim;
      j["linear_conv_kernel_dim"] = g.conv_kernel;
      j["layer_types"] = layer_types(g.layers, "linear_attention");
    }
    if (c.rope.type != "default") {
      nlohmann::ordered_json r = {{"rope_type", c.rope.type}, {"factor", c.rope.factor}};
      if (c.rope.original_max_position_embeddings > 0)
        r["original_max_position_embeddings"] = c.rope.original_max_position_embeddings;
      if (c.rope.type == "llama3") {
        r["low_freq_factor"] = c.rope.low_freq_factor;
        r["high_freq_factor"] = c.rope.high_freq_factor;
      }
      if (c.rope.type == "yarn") {
        if (c.rope.attention_factor) r["attention_factor"] = *c.rope.attention_factor;
        if (c.rope.mscale) r["mscale"] = *c.rope.mscale;
        if (c.rope.mscale_all_dim) r["mscale_all_dim"] = *c.rope.mscale_all_dim;
        r["beta_fast"] = c.rope.beta_fast;
        r["beta_slow"] = c.rope.beta_slow;
        r["truncate"] = c.rope.truncate;
      }
      j["rope_scaling"] = r;
    }
    if (c.model_type == "llama" || c.model_type == "qwen3" || c.model_type == "qwen3_moe")
      j["attention_bias"] = c.attention_bias;
    if (c.model_type == "llama") j["mlp_bias"] = c.mlp_bias;
    if (c.moe.num_experts > 0 || next) {  // qwen3_next: 0 experts is a dense model, not the default
      const bool mixtral = c.model_type == "mixtral", gpt_oss = c.moe.gpt_oss, glm = c.moe.sigmoid_scores;
      j[mixtral || gpt_oss ? "num_local_experts"
        : glm              ? "n_routed_experts"
                           : "num_experts"] = c.moe.num_experts;
      j["num_experts_per_tok"] = c.moe.experts_per_token;
      if (glm) {
        j["moe_intermediate_size"] = c.moe.intermediate_size;
        j["norm_topk_prob"] = c.moe.normalize_top_k;
        j["n_group"] = c.moe.groups;
        j["topk_group"] = c.moe.groups_kept;
        j["routed_scaling_factor"] = c.moe.routed_scaling;
        j["n_shared_experts"] = c.moe.shared_intermediate_size / c.moe.intermediate_size;
        j["first_k_dense_replace"] = c.moe.first_dense_layers;
        j["use_qk_norm"] = c.qk_norm;
      } else if (gpt_oss) {
        j["swiglu_alpha"] = c.moe.swiglu_alpha;
        j["swiglu_limit"] = c.moe.swiglu_limit;
      } else if (!mixtral) {
        j["moe_intermediate_size"] = c.moe.intermediate_size;
        j["norm_topk_prob"] = c.moe.normalize_top_k;
        j["decoder_sparse_step"] = c.moe.sparse_step;
        j["mlp_only_layers"] = c.moe.dense_layers;
        if (next) j["shared_expert_intermediate_size"] = c.moe.shared_intermediate_size;
      }
      j["output_router_logits"] = c.moe.router_losses;
      j["router_aux_loss_coef"] = c.moe.aux_loss_coef;
      if (c.moe.z_loss_coef > 0) j["router_z_loss_coef"] = c.moe.z_loss_coef;
    }
    if (c.model_type == "mistral" || c.model_type == "mixtral")
      j["sliding_window"] =
          c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nlohmann::ordered_json();
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = c.dtype;
  return j.dump(2) + "\n";
}

}  // namespace models
}  // namespace dew
