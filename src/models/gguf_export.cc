// save_gguf: a llama-family CausalLM and its tokenizer as one GGUF file in llama.cpp's names. llama.cpp's
// "llama" architecture rotates interleaved pairs (x[2i], x[2i+1]) where Hugging Face's rotates halves
// (x[i], x[i + D/2]), so q and k rows are reordered within each head, as llama.cpp's converter does;
// qwen2 and qwen3 keep Hugging Face's order (llama.cpp rotates halves for them).
#include <dew/autodiff.h>
#include <dew/error.h>
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/tokenizer.h>
#include <fmt/core.h>

#include <map>

#include "io/gguf_file.h"

namespace dew {
namespace {

// Rows (h, s, i) -> (h, i, s) of a (heads * D, ...) weight or bias: halves to interleaved pairs.
Tensor interleave_rotary_rows(const Tensor& x, int64_t heads) {
  const int64_t D = x.size(0) / heads;
  if (x.dim() == 1) return permute_copy(x.reshape({heads, 2, D / 2}), {0, 2, 1}).reshape(x.shape());
  return permute_copy(x.reshape({heads, 2, D / 2, x.size(1)}), {0, 2, 1, 3}).reshape(x.shape());
}

std::string architecture_of(const ModelConfig& c) {
  if (c.model_type == "llama" || c.model_type == "mistral") return "llama";
  if (c.model_type == "qwen2" || c.model_type == "qwen3") return c.model_type;
  fail("[gguf] model_type {}; Dew writes llama, mistral, qwen2 and qwen3 models to GGUF", c.model_type);
}

// The config fields llama.cpp's architectures have no key for: refused, never dropped.
void require_expressible(const ModelConfig& c) {
  DEW_REQUIRE(c.rope.type == "default",
              "[gguf] rope_scaling type {}; Dew writes GGUF files for unscaled rotary embeddings only",
              c.rope.type);
  DEW_REQUIRE(
      c.rope.partial_rotary_factor == 1,
      "[gguf] partial_rotary_factor {}; Dew writes GGUF files for rotary embeddings over the whole head",
      c.rope.partial_rotary_factor);
  DEW_REQUIRE(c.sliding_window == 0 || c.sliding_window >= c.max_position_embeddings,
              "[gguf] sliding_window {}; llama.cpp's {} architecture attends to the whole context (expected "
              "none)",
              c.sliding_window, architecture_of(c));
  DEW_REQUIRE(c.head_dim % 2 == 0, "[gguf] head_dim {}; rotary embeddings need an even head size",
              c.head_dim);
}

// Hugging Face's name of a layer tensor (after "model.layers.N.") -> llama.cpp's (after "blk.N.").
const std::map<std::string, std::string>& layer_names() {
  static const std::map<std::string, std::string> names = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.o_proj.bias", "attn_output.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.gate_proj.bias", "ffn_gate.bias"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.up_proj.bias", "ffn_up.bias"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.down_proj.bias", "ffn_down.bias"}};
  return names;
}

std::string gguf_name(const std::string& hf_name) {
  if (hf_name == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf_name == "model.norm.weight") return "output_norm.weight";
  if (hf_name == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  if (hf_name.starts_with(prefix)) {
    const size_t dot = hf_name.find('.', prefix.size());
    const auto it =
        dot == std::string::npos ? layer_names().end() : layer_names().find(hf_name.substr(dot + 1));
    if (it != layer_names().end())
      return "blk." + hf_name.substr(prefix.size(), dot - prefix.size()) + "." + it->second;
  }
  fail("[gguf] parameter {} has no name in llama.cpp's llama-family architectures", hf_name);
}

void add_model_metadata(GgufWriter& w, const ModelConfig& c, const std::string& arch, DType dtype) {
  w.add_string("general.architecture", arch);
  w.add_string("general.name", c.model_type);
  // llama_ftype: all f32, mostly f16, mostly bf16.
  w.add_u32("general.file_type", dtype == DType::f32 ? 0 : dtype == DType::f16 ? 1 : 32);
  w.add_u32(arch + ".context_length", uint32_t(c.max_position_embeddings));
  w.add_u32(arch + ".embedding_length", uint32_t(c.hidden_size));
  w.add_u32(arch + ".block_count", uint32_t(c.num_hidden_layers));
  w.add_u32(arch + ".feed_forward_length", uint32_t(c.intermediate_size));
  w.add_u32(arch + ".attention.head_count", uint32_t(c.num_attention_heads));
  w.add_u32(arch + ".attention.head_count_kv", uint32_t(c.num_key_value_heads));
  w.add_u32(arch + ".attention.key_length", uint32_t(c.head_dim));
  w.add_u32(arch + ".attention.value_length", uint32_t(c.head_dim));
  w.add_u32(arch + ".rope.dimension_count", uint32_t(c.head_dim));
  w.add_f32(arch + ".rope.freq_base", float(c.rope.theta));
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", float(c.norm_eps));
  w.add_u32(arch + ".vocab_size", uint32_t(c.vocab_size));
}

void add_vocabulary(GgufWriter& w, const GgufVocabulary& v) {
  w.add_string("tokenizer.ggml.model", v.model);
  w.add_string("tokenizer.ggml.pre", v.pre);
  w.add_strings("tokenizer.ggml.tokens", v.tokens);
  w.add_i32s("tokenizer.ggml.token_type", v.token_types);
  w.add_strings("tokenizer.ggml.merges", v.merges);
  if (v.bos) w.add_u32("tokenizer.ggml.bos_token_id", uint32_t(*v.bos));
  if (v.eos) w.add_u32("tokenizer.ggml.eos_token_id", uint32_t(*v.eos));
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  w.add_bool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace

void save_gguf(const CausalLM& model, const Tokenizer& tokenizer, const std::string& path, DType dtype) {
  DEW_REQUIRE(dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16,
              "[gguf] dtype {}; expected f32, f16 or bf16 weights", dtype_name(dtype));
  const ModelConfig& c = model.config();
  const std::string arch = architecture_of(c);
  require_expressible(c);
  NoGrad no_grad;
  GgufWriter w;
  add_model_metadata(w, c, arch, dtype);
  add_vocabulary(w, tokenizer.gguf_vocabulary(c.vocab_size));
  for (const auto& [name, parameter] : model.parameters()) {
    Tensor t = parameter.to(Device::cpu());
    // Norm weights and biases stay f32, as llama.cpp's converter keeps every 1-D tensor.
    t = cast(t, t.dim() == 1 ? DType::f32 : dtype);
    if (arch == "llama" && (name.ends_with("q_proj.weight") || name.ends_with("q_proj.bias")))
      t = interleave_rotary_rows(t, c.num_attention_heads);
    if (arch == "llama" && (name.ends_with("k_proj.weight") || name.ends_with("k_proj.bias")))
      t = interleave_rotary_rows(t, c.num_key_value_heads);
    w.add_tensor(gguf_name(name), t);
  }
  w.write(path);
}

}  // namespace dew
