// The llama family's decoder (llama, mistral, qwen2, qwen3, mixtral, qwen3_moe): x = embed(ids); per
// layer x += o(attention(rope(q), rope(k), v)) after an RMSNorm, x += down(swiglu(gate, up)) after
// another (or the experts' mixture, moe.cc); logits = head(norm(x)). Written with ops only, so it records for
// differentiation.
#include <dew/ops.h>

#include <algorithm>
#include <functional>

#include "models/families.h"

namespace dew::models {
namespace {

std::string layer(int64_t i, const std::string& rest) {
  return fmt::format("model.layers.{}.{}", i, rest);
}

// nn.Linear: x @ W^T + b (+ residual), in one GEMM with its epilogue.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = {}, const Tensor& residual = {}) {
  MatmulOptions o;
  o.transpose_b = true;
  o.bias = bias;
  o.residual = residual;
  return matmul(x, w, o);
}

const Tensor& optional(const Parameters& p, const std::string& name, bool present) {
  static const Tensor none;
  return present ? parameter(p, name) : none;
}

// The Hugging Face names of a sparse layer's experts: mixtral's block_sparse_moe with w1 (gate),
// w3 (up) and w2 (down); qwen3_moe's mlp with gate_proj, up_proj and down_proj.
struct ExpertNames {
  std::string router;
  std::function<std::string(int64_t)> gate, up, down;
};
ExpertNames expert_names(const ModelConfig& c, int64_t i) {
  const bool mixtral = c.model_type == "mixtral";
  const std::string block = mixtral ? "block_sparse_moe" : "mlp";
  const auto matrix = [=](const char* name) {
    return [=](int64_t e) { return layer(i, fmt::format("{}.experts.{}.{}.weight", block, e, name)); };
  };
  return {layer(i, block + ".gate.weight"), matrix(mixtral ? "w1" : "gate_proj"),
          matrix(mixtral ? "w3" : "up_proj"), matrix(mixtral ? "w2" : "down_proj")};
}

}  // namespace

ParameterShapes llama_parameter_shapes(const ModelConfig& c) {
  const int64_t C = c.hidden_size, F = c.intermediate_size, D = c.head_dim, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads;
  ParameterShapes s = {{"model.embed_tokens.weight", {c.vocab_size, C}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    s.push_back({layer(i, "input_layernorm.weight"), {C}});
    for (auto [proj, rows] : {std::pair{"q", H * D}, {"k", Hkv * D}, {"v", Hkv * D}}) {
      s.push_back({layer(i, fmt::format("self_attn.{}_proj.weight", proj)), {rows, C}});
      if (c.attention_bias) s.push_back({layer(i, fmt::format("self_attn.{}_proj.bias", proj)), {rows}});
    }
    s.push_back({layer(i, "self_attn.o_proj.weight"), {C, H * D}});
    if (c.attention_output_bias) s.push_back({layer(i, "self_attn.o_proj.bias"), {C}});
    if (c.qk_norm) {
      s.push_back({layer(i, "self_attn.q_norm.weight"), {D}});
      s.push_back({layer(i, "self_attn.k_norm.weight"), {D}});
    }
    s.push_back({layer(i, "post_attention_layernorm.weight"), {C}});
    if (c.moe.is_sparse(i)) {
      const ExpertNames n = expert_names(c, i);
      const int64_t Fe = c.moe.intermediate_size;
      s.push_back({n.router, {c.moe.num_experts, C}});
      for (int64_t e = 0; e < c.moe.num_experts; ++e)
        for (auto [name, shape] :
             {std::pair{n.gate(e), Shape{Fe, C}}, {n.up(e), Shape{Fe, C}}, {n.down(e), Shape{C, Fe}}})
          s.push_back({name, shape});
      continue;
    }
    for (auto [proj, shape] : {std::pair{"gate", Shape{F, C}}, {"up", Shape{F, C}}, {"down", Shape{C, F}}}) {
      s.push_back({layer(i, fmt::format("mlp.{}_proj.weight", proj)), shape});
      if (c.mlp_bias) s.push_back({layer(i, fmt::format("mlp.{}_proj.bias", proj)), {shape[0]}});
    }
  }
  s.push_back({"model.norm.weight", {C}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {c.vocab_size, C}});
  return s;
}

Tensor llama_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                     LayerAttention& attend, AttentionOptions mask, const Tensor& logit_rows,
                     RouterStats* router) {
  const int64_t B = ids.size(0), T = ids.size(1), H = c.num_attention_heads, Hkv = c.num_key_value_heads,
                D = c.head_dim;
  const Tensor& embed = parameter(p, "model.embed_tokens.weight");
  const DType table_dtype = embed.dtype() == DType::f64 ? DType::f64 : DType::f32;
  // The tables cover every position of the call; `dynamic` scaling depends on that length.
  std::vector<double> pos = positions.to_f64_vector();
  const int64_t length = pos.empty() ? 1 : int64_t(*std::max_element(pos.begin(), pos.end())) + 1;
  const int64_t first = pos.empty() ? 0 : int64_t(*std::min_element(pos.begin(), pos.end()));
  const RopeFrequencies freq = rope_frequencies(c, length);
  // Built on the host in f64, then moved to where the model runs.
  RopeTables tables =
      rope_tables(c.rope.theta, freq.rotary_dim, length, table_dtype,
                  Tensor::from_values(freq.inv_freq, {int64_t(freq.inv_freq.size())}, DType::f64), first);
  tables = {tables.cos.to(ids.device()), tables.sin.to(ids.device())};
  if (freq.attention_factor != 1) {  // yarn: cos and sin scaled
    const Tensor factor = Tensor::full({}, freq.attention_factor, table_dtype, ids.device());
    tables = {mul(tables.cos, factor), mul(tables.sin, factor)};
  }
  mask.window = c.sliding_window;
  std::vector<uint8_t> counted;  // the tokens a router's statistics count: all but padding
  if (router && mask.q_segments.defined()) {
    const Tensor segments = mask.q_segments.to(Device::cpu()).contiguous();
    for (int64_t n = 0; n < segments.numel(); ++n) counted.push_back(segments.data<int64_t>()[n] != 0);
  }

  Tensor x = embedding(embed, ids);  // (B,T,C)
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    auto w = [&](const std::string& rest) -> const Tensor& { return parameter(p, layer(i, rest)); };
    auto b = [&](const std::string& rest, bool present) -> const Tensor& {
      return optional(p, layer(i, rest), present);
    };
    const Tensor h = rms_norm(x, w("input_layernorm.weight"), c.norm_eps);
    Tensor q = linear(h, w("self_attn.q_proj.weight"), b("self_attn.q_proj.bias", c.attention_bias))
                   .reshape({B, T, H, D});
    Tensor k = linear(h, w("self_attn.k_proj.weight"), b("self_attn.k_proj.bias", c.attention_bias))
                   .reshape({B, T, Hkv, D});
    Tensor v = linear(h, w("self_attn.v_proj.weight"), b("self_attn.v_proj.bias", c.attention_bias))
                   .reshape({B, T, Hkv, D});
    if (c.qk_norm) {
      q = rms_norm(q, w("self_attn.q_norm.weight"), c.norm_eps);
      k = rms_norm(k, w("self_attn.k_norm.weight"), c.norm_eps);
    }
    q = rope(q, positions, tables);
    k = rope(k, positions, tables);
    const Tensor att = attend.attend(i, q, k, v, mask).reshape({B, T, H * D});
    x = linear(att, w("self_attn.o_proj.weight"), b("self_attn.o_proj.bias", c.attention_output_bias), x);
    const Tensor h2 = rms_norm(x, w("post_attention_layernorm.weight"), c.norm_eps);
    if (c.moe.is_sparse(i)) {
      const ExpertNames n = expert_names(c, i);
      const int64_t E = c.moe.num_experts, C = c.hidden_size;
      const ExpertWeights experts{parameter(p, n.router), stack_experts(p, E, n.gate),
                                  stack_experts(p, E, n.up), stack_experts(p, E, n.down)};
      x = add(x, moe_mlp(h2.reshape({B * T, C}), experts, c.moe, counted, router).reshape({B, T, C}));
      continue;
    }
    const Tensor gated = swiglu(linear(h2, w("mlp.gate_proj.weight"), b("mlp.gate_proj.bias", c.mlp_bias)),
                                linear(h2, w("mlp.up_proj.weight"), b("mlp.up_proj.bias", c.mlp_bias)));
    x = linear(gated, w("mlp.down_proj.weight"), b("mlp.down_proj.bias", c.mlp_bias), x);
  }
  x = rms_norm(logit_positions(x, logit_rows), parameter(p, "model.norm.weight"), c.norm_eps);
  return linear(x, c.tie_word_embeddings ? embed : parameter(p, "lm_head.weight"));
}

}  // namespace dew::models
