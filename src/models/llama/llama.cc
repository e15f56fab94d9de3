// The llama family's decoder (llama, mistral, qwen2, qwen3, mixtral, qwen3_moe, gpt_oss, glm4_moe,
// gemma, gemma2, gemma3_text, olmo2, qwen3_next): x = embed(ids); per layer x += o(attention(rope(q),
// rope(k), v)) after an RMSNorm (or a Gated DeltaNet's mixing, gated_delta_net.cc), x += down(act(gate)
// * up) after another (or the experts' mixture, moe.cc); logits = head(norm(x)). DecoderSwitches move
// the norms, scale, caps and gates: one decoder serves every family.
// Written with ops only, so it records for differentiation.
#include <dew/ops.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "models/families.h"
#include "models/linear.h"

namespace dew::models {
namespace {

std::string layer(int64_t i, std::string_view rest) {
  return fmt::format("model.layers.{}.{}", i, rest);
}

// The Hugging Face names of a sparse layer's experts: mixtral's block_sparse_moe with w1 (gate),
// w3 (up) and w2 (down); qwen3_moe's, glm4_moe's and qwen3_next's mlp with gate_proj, up_proj and
// down_proj.
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

// The shared expert's matrices beside the routed ones: glm4_moe's mlp.shared_experts, qwen3_next's
// (gated) mlp.shared_expert.
std::string shared_expert(const MoeConfig& m, const std::string& proj) {
  return fmt::format("mlp.shared_expert{}.{}_proj.weight", m.shared_expert_gate ? "" : "s", proj);
}

// The norms around a layer's two sub-blocks, by the names each family gives them: llama's pre-norms
// input_layernorm and post_attention_layernorm; gemma2's and gemma3's four (input_, post_attention_,
// pre_feedforward_, post_feedforward_layernorm); olmo2's two post-norms. Empty: no such norm.
struct NormNames {
  std::string before_attention, after_attention, before_mlp, after_mlp;
};
NormNames norm_names(const DecoderSwitches& d) {
  NormNames n;
  if (d.pre_norms) {
    n.before_attention = "input_layernorm.weight";
    n.before_mlp = d.post_norms ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight";
  }
  if (d.post_norms) {
    n.after_attention = "post_attention_layernorm.weight";
    n.after_mlp = "post_feedforward_layernorm.weight";
  }
  return n;
}

// The positions a call's rotary tables cover: from `first` to `length` - 1.
struct PositionSpan {
  int64_t first = 0, length = 1;
};
PositionSpan position_span(const Tensor& positions) {
  const std::vector<double> pos = positions.to_f64_vector();
  if (pos.empty()) return {};
  return {int64_t(*std::min_element(pos.begin(), pos.end())),
          int64_t(*std::max_element(pos.begin(), pos.end())) + 1};
}

// The rotary tables for the span, built on the host in f64 and moved to `device`; `dynamic` scaling
// depends on the longest position. gemma3's sliding layers use their own base, unscaled (`local`).
RopeTables rotary_tables(const ModelConfig& c, PositionSpan span, DType dtype, Device device, bool local) {
  ModelConfig rope_config = c;
  if (local) rope_config.rope = RopeConfig{.theta = c.decoder.local_rope_theta};
  const RopeFrequencies freq = rope_frequencies(rope_config, span.length);
  RopeTables tables = rope_tables(
      rope_config.rope.theta, freq.rotary_dim, span.length, dtype,
      Tensor::from_values(freq.inv_freq, {int64_t(freq.inv_freq.size())}, DType::f64), span.first);
  tables = {tables.cos.to(device), tables.sin.to(device)};
  if (freq.attention_factor != 1) {  // yarn: cos and sin scaled
    const Tensor factor = Tensor::full({}, freq.attention_factor, dtype, device);
    tables = {mul(tables.cos, factor), mul(tables.sin, factor)};
  }
  return tables;
}

// cap * tanh(x / cap) (gemma2's final logits).
Tensor softcap(const Tensor& x, double cap) {
  const auto scalar = [&](double v) { return Tensor::full({}, v, x.dtype(), x.device()); };
  return mul(tanh(mul(x, scalar(1 / cap))), scalar(cap));
}

}  // namespace

ParameterShapes llama_parameter_shapes(const ModelConfig& c) {
  const int64_t C = c.hidden_size, F = c.intermediate_size, D = c.head_dim, H = c.num_attention_heads,
                Hkv = c.num_key_value_heads;
  const NormNames norms = norm_names(c.decoder);
  ParameterShapes s = {{"model.embed_tokens.weight", {c.vocab_size, C}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    if (!norms.before_attention.empty()) s.push_back({layer(i, norms.before_attention), {C}});
    const bool delta_net = c.delta_net.replaces_attention(i);
    if (delta_net) gated_delta_net_parameter_shapes(c, i, s);
    // qwen3_next's q_proj yields each head's gate logits too.
    const int64_t q_rows = (c.decoder.attention_output_gate ? 2 : 1) * H * D;
    for (auto [proj, rows] : {std::pair{"q", q_rows}, {"k", Hkv * D}, {"v", Hkv * D}}) {
      if (delta_net) break;
      s.push_back({layer(i, fmt::format("self_attn.{}_proj.weight", proj)), {rows, C}});
      if (c.attention_bias) s.push_back({layer(i, fmt::format("self_attn.{}_proj.bias", proj)), {rows}});
    }
    if (!delta_net) s.push_back({layer(i, "self_attn.o_proj.weight"), {C, H * D}});
    if (!delta_net && c.attention_output_bias) s.push_back({layer(i, "self_attn.o_proj.bias"), {C}});
    if (c.qk_norm && !delta_net) {
      const bool whole = c.decoder.qk_norm_whole;
      s.push_back({layer(i, "self_attn.q_norm.weight"), {whole ? H * D : D}});
      s.push_back({layer(i, "self_attn.k_norm.weight"), {whole ? Hkv * D : D}});
    }
    for (const std::string* norm : {&norms.after_attention, &norms.before_mlp, &norms.after_mlp})
      if (!norm->empty()) s.push_back({layer(i, *norm), {C}});
    if (c.decoder.attention_sinks) s.push_back({layer(i, "self_attn.sinks"), {H}});
    if (c.moe.gpt_oss) {  // experts stored stacked, as x @ W: (E,C,2F) with gate and up interleaved
      const int64_t E = c.moe.num_experts, Fe = c.moe.intermediate_size;
      for (auto [name, shape] : {std::pair{"router.weight", Shape{E, C}},
                                 {"router.bias", Shape{E}},
                                 {"experts.gate_up_proj", Shape{E, C, 2 * Fe}},
                                 {"experts.gate_up_proj_bias", Shape{E, 2 * Fe}},
                                 {"experts.down_proj", Shape{E, Fe, C}},
                                 {"experts.down_proj_bias", Shape{E, C}}})
        s.push_back({layer(i, std::string("mlp.") + name), shape});
      continue;
    }
    if (c.moe.is_sparse(i)) {
      const ExpertNames n = expert_names(c, i);
      const int64_t Fe = c.moe.intermediate_size;
      s.push_back({n.router, {c.moe.num_experts, C}});
      for (int64_t e = 0; e < c.moe.num_experts; ++e)
        for (auto [name, shape] :
             {std::pair{n.gate(e), Shape{Fe, C}}, {n.up(e), Shape{Fe, C}}, {n.down(e), Shape{C, Fe}}})
          s.push_back({name, shape});
      if (c.moe.sigmoid_scores)
        s.push_back({layer(i, "mlp.gate.e_score_correction_bias"), {c.moe.num_experts}});
      if (const int64_t Fs = c.moe.shared_intermediate_size; Fs > 0)
        for (auto [proj, shape] :
             {std::pair{"gate", Shape{Fs, C}}, {"up", Shape{Fs, C}}, {"down", Shape{C, Fs}}})
          s.push_back({layer(i, shared_expert(c.moe, proj)), shape});
      if (c.moe.shared_expert_gate) s.push_back({layer(i, "mlp.shared_expert_gate.weight"), {1, C}});
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

void pack_llama_projections(const ModelConfig& c, Parameters& p) {
  // The named parameters moved into one tensor, in order, each replaced by its rows of it.
  const auto pack = [&](const std::vector<std::string>& names) {
    std::vector<Tensor> parts;
    for (const std::string& name : names) parts.push_back(parameter(p, name));
    if (Tensor::joined_view(parts).defined()) return;  // packed already
    Shape shape = parts[0].shape();
    shape[0] = 0;
    for (const Tensor& t : parts) shape[0] += t.size(0);
    const Tensor packed = Tensor::empty(shape, parts[0].dtype(), parts[0].device());
    int64_t row = 0;
    for (const std::string& name : names) {
      Tensor& t = p.at(name);
      Tensor rows = packed.slice(0, row, row + t.size(0));
      rows.copy_from(t);
      row += t.size(0);
      t = rows;
    }
  };
  const auto names = [](int64_t i, const char* block, std::vector<const char*> projections,
                        const char* kind) {
    std::vector<std::string> n;
    for (const char* proj : projections)
      n.push_back(layer(i, fmt::format("{}.{}_proj.{}", block, proj, kind)));
    return n;
  };
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    if (!c.delta_net.replaces_attention(i))
      for (const char* kind : c.attention_bias ? std::vector{"weight", "bias"} : std::vector{"weight"})
        pack(names(i, "self_attn", {"q", "k", "v"}, kind));
    if (!c.moe.is_sparse(i))
      for (const char* kind : c.mlp_bias ? std::vector{"weight", "bias"} : std::vector{"weight"})
        pack(names(i, "mlp", {"gate", "up"}, kind));
  }
}

Tensor llama_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                     LayerAttention& attend, AttentionOptions mask, const Tensor& logit_rows,
                     LayerBoundaries* boundaries, RouterStats* router, TensorParallel* tensor) {
  // Under tensor parallelism this rank computes its share of the heads (CausalLM::tensor_shard).
  const int64_t tp = tensor ? tensor->size() : 1;
  const int64_t B = ids.size(0), T = ids.size(1), C = c.hidden_size, H = c.num_attention_heads / tp,
                Hkv = c.num_key_value_heads / tp, D = c.head_dim;
  const DecoderSwitches& d = c.decoder;
  const NormNames norms = norm_names(d);
  const Tensor& embed = parameter(p, "model.embed_tokens.weight");
  const DType table_dtype = embed.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const PositionSpan span = position_span(positions);
  const RopeTables global = rotary_tables(c, span, table_dtype, positions.device(), false);
  const RopeTables local =
      d.local_rope_theta > 0 ? rotary_tables(c, span, table_dtype, positions.device(), true) : global;
  if (d.query_pre_attn_scalar > 0) mask.scale = 1 / std::sqrt(d.query_pre_attn_scalar);
  mask.softcap = d.attention_softcap;
  std::vector<uint8_t> counted;  // the tokens a router's statistics count: all but padding
  if (router && mask.q_segments.defined()) {
    const Tensor segments = mask.q_segments.to(Device::cpu()).contiguous();
    for (int64_t n = 0; n < segments.numel(); ++n) counted.push_back(segments.data<int64_t>()[n] != 0);
  }
  // gemma's norms scale by 1 + w (the checkpoint holds w), the others' by w.
  const auto norm = [&](const Tensor& x, const Tensor& weight) {
    return rms_norm(
        x, d.norm_plus_one ? add(weight, Tensor::full({}, 1.0, weight.dtype(), weight.device())) : weight,
        c.norm_eps);
  };

  const int64_t L = c.num_hidden_layers;
  Tensor x = embedding(embed, ids);  // (B,T,C)
  if (d.scale_embeddings) x = mul(x, Tensor::full({}, std::sqrt(double(C)), x.dtype(), x.device()));
  for (int64_t i = 0; i < L; ++i) {
    x = enter_layer(boundaries, i, x);
    auto w = [&](std::string_view rest) -> const Tensor& { return parameter(p, layer(i, rest)); };
    auto b = [&](std::string_view rest, bool present) -> const Tensor& {  // an absent one's name unmade
      static const Tensor none;
      return present ? w(rest) : none;
    };
    // A sub-block's output joins the residual stream: inside the product's epilogue, or after the
    // post-norm where there is one.
    const auto residual_add = [&](const std::string& after, const Tensor& product_input, const Tensor& weight,
                                  const Tensor& bias) {
      if (tensor) {  // row parallel: the ranks' partial products summed, then the bias once
        Tensor y = tensor->reduce(linear(product_input, weight));
        if (bias.defined()) y = add(y, bias);
        return add(x, after.empty() ? y : norm(y, w(after)));
      }
      if (after.empty()) return linear(product_input, weight, bias, x);
      return add(x, norm(linear(product_input, weight, bias), w(after)));
    };
    // A column-parallel sub-block's input: its gradient summed over the ranks' heads or hidden units.
    const auto sub_block_input = [&](const Tensor& h) { return tensor ? tensor->copy(h) : h; };
    const Tensor h = sub_block_input(norms.before_attention.empty() ? x : norm(x, w(norms.before_attention)));
    // Attention's output, o_proj's input (B,T,H D).
    const auto attention_block = [&]() {
      const std::vector<Tensor> qkv = linears(
          h, {w("self_attn.q_proj.weight"), w("self_attn.k_proj.weight"), w("self_attn.v_proj.weight")},
          {b("self_attn.q_proj.bias", c.attention_bias), b("self_attn.k_proj.bias", c.attention_bias),
           b("self_attn.v_proj.bias", c.attention_bias)});
      Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // views of one product's columns when packed
      Tensor gate;
      if (d.attention_output_gate) {  // each head's D queries, then its D gate logits
        const std::vector<Tensor> parts = split(q.reshape({B, T, H, 2 * D}), {D, D}, -1);
        q = parts[0];
        gate = parts[1].reshape({B, T, H * D});
      }
      if (c.qk_norm && d.qk_norm_whole) {  // olmo2: over the whole projection, before the heads split
        q = norm(q, w("self_attn.q_norm.weight"));
        k = norm(k, w("self_attn.k_norm.weight"));
      }
      q = q.reshape({B, T, H, D});
      k = k.reshape({B, T, Hkv, D});
      v = v.reshape({B, T, Hkv, D});
      if (c.qk_norm && !d.qk_norm_whole) {
        q = norm(q, w("self_attn.q_norm.weight"));
        k = norm(k, w("self_attn.k_norm.weight"));
      }
      const bool sliding = c.sliding(i);
      const RopeTables& tables = sliding ? local : global;
      q = rope(q, positions, tables);
      k = rope(k, positions, tables);
      mask.window = sliding ? c.sliding_window : 0;
      if (d.attention_sinks) mask.sinks = as_dtype(w("self_attn.sinks"), table_dtype);
      const Tensor att = attend.attend(i, q, k, v, mask).reshape({B, T, H * D});
      return gate.defined() ? mul(att, sigmoid(gate)) : att;
    };
    if (c.delta_net.replaces_attention(i))
      x = residual_add(norms.after_attention,
                       attend.mix(i, h,
                                  [&](const Tensor& rows, KvCache* cache, const Tensor& segments) {
                                    return gated_delta_net(c, p, i, rows, segments, cache);
                                  }),
                       w("linear_attn.out_proj.weight"), {});
    else
      x = residual_add(norms.after_attention, attention_block(), w("self_attn.o_proj.weight"),
                       b("self_attn.o_proj.bias", c.attention_output_bias));
    const Tensor h2 = sub_block_input(norms.before_mlp.empty() ? x : norm(x, w(norms.before_mlp)));
    if (c.moe.is_sparse(i)) {
      ExpertWeights experts;
      if (c.moe.gpt_oss) {
        experts = {.router = w("mlp.router.weight"),
                   .router_bias = w("mlp.router.bias"),
                   .gate_up = w("mlp.experts.gate_up_proj"),
                   .gate_up_bias = w("mlp.experts.gate_up_proj_bias"),
                   .down = w("mlp.experts.down_proj"),
                   .down_bias = w("mlp.experts.down_proj_bias")};
      } else {
        const ExpertNames n = expert_names(c, i);
        const int64_t E = c.moe.num_experts;
        experts = {.router = parameter(p, n.router),
                   .gate = stack_experts(p, E, n.gate),
                   .up = stack_experts(p, E, n.up),
                   .down = stack_experts(p, E, n.down)};
        if (c.moe.sigmoid_scores) experts.score_bias = w("mlp.gate.e_score_correction_bias");
      }
      x = add(x, moe_mlp(h2.reshape({B * T, C}), experts, c.moe, counted, router).reshape({B, T, C}));
      if (c.moe.shared_intermediate_size > 0) {  // every token's shared expert, a dense MLP
        const Tensor hidden =
            swiglu(linear(h2, w(shared_expert(c.moe, "gate"))), linear(h2, w(shared_expert(c.moe, "up"))));
        const Tensor& down = w(shared_expert(c.moe, "down"));
        x = c.moe.shared_expert_gate  // qwen3_next: scaled by its gate's sigmoid
                ? add(x, mul(sigmoid(linear(h2, w("mlp.shared_expert_gate.weight"))), linear(hidden, down)))
                : linear(hidden, down, {}, x);
      }
      continue;
    }
    const Tensor gated =
        gated_linear(h2, w("mlp.gate_proj.weight"), w("mlp.up_proj.weight"),
                     b("mlp.gate_proj.bias", c.mlp_bias), b("mlp.up_proj.bias", c.mlp_bias),
                     d.activation == "silu"
                         ? Activation::silu
                         : (d.activation == "gelu_tanh" ? Activation::gelu_tanh : Activation::gelu_erf));
    x = residual_add(norms.after_mlp, gated, w("mlp.down_proj.weight"), b("mlp.down_proj.bias", c.mlp_bias));
  }
  x = enter_layer(boundaries, L, x);
  x = norm(logit_positions(x, logit_rows), parameter(p, "model.norm.weight"));
  const Tensor logits = linear(x, c.tie_word_embeddings ? embed : parameter(p, "lm_head.weight"));
  return d.final_logit_softcap > 0 ? softcap(logits, d.final_logit_softcap) : logits;
}

}  // namespace dew::models
