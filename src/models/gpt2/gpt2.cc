// GPT-2: x = wte(ids) + wpe(positions); per layer x += c_proj(attention(split(c_attn(ln_1(x))))) and
// x += c_proj(gelu_tanh(c_fc(ln_2(x)))); logits = ln_f(x) @ wte^T. Conv1D weights are stored
// (in, out), so the products do not transpose them; packed for inference, each is the transpose of its
// (out, in) rows (CausalLM::pack_projections).
#include <dew/ops.h>

#include "models/families.h"

namespace dew::models {
namespace {

std::string block(int64_t i, const std::string& rest) {
  return fmt::format("h.{}.{}", i, rest);
}

// The Conv1D weights (in, out) of layer i.
std::vector<std::string> conv1d_weights(int64_t i) {
  return {block(i, "attn.c_attn.weight"), block(i, "attn.c_proj.weight"), block(i, "mlp.c_fc.weight"),
          block(i, "mlp.c_proj.weight")};
}

// x @ w for a Conv1D weight w (in, out); as nn.Linear's product x @ rows^T when w is the transpose of
// (out, in) rows laid out one after another (pack_gpt2_projections): the layout the one-row and
// few-row kernels read (cpu.*.gemv, rows_in_lanes).
Tensor conv1d(const Tensor& x, const Tensor& w, MatmulOptions o) {
  const Tensor rows = w.transpose(0, 1);
  if (!rows.is_contiguous()) return matmul(x, w, o);
  o.transpose_b = true;
  return matmul(x, rows, o);
}

}  // namespace

void pack_gpt2_projections(const ModelConfig& c, Parameters& p) {
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    for (const std::string& name : conv1d_weights(i)) {
      Tensor& w = p.at(name);
      if (!w.is_contiguous()) continue;  // laid out by rows already
      w = w.transpose(0, 1).contiguous().transpose(0, 1);
    }
}

ParameterShapes gpt2_parameter_shapes(const ModelConfig& c) {
  const int64_t C = c.hidden_size, F = c.intermediate_size;
  ParameterShapes s = {{"wte.weight", {c.vocab_size, C}}, {"wpe.weight", {c.max_position_embeddings, C}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    for (const char* norm : {"ln_1", "ln_2"}) {
      s.push_back({block(i, fmt::format("{}.weight", norm)), {C}});
      s.push_back({block(i, fmt::format("{}.bias", norm)), {C}});
    }
    s.push_back({block(i, "attn.c_attn.weight"), {C, 3 * C}});
    s.push_back({block(i, "attn.c_attn.bias"), {3 * C}});
    s.push_back({block(i, "attn.c_proj.weight"), {C, C}});
    s.push_back({block(i, "attn.c_proj.bias"), {C}});
    s.push_back({block(i, "mlp.c_fc.weight"), {C, F}});
    s.push_back({block(i, "mlp.c_fc.bias"), {F}});
    s.push_back({block(i, "mlp.c_proj.weight"), {F, C}});
    s.push_back({block(i, "mlp.c_proj.bias"), {C}});
  }
  s.push_back({"ln_f.weight", {C}});
  s.push_back({"ln_f.bias", {C}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {c.vocab_size, C}});
  return s;
}

Tensor gpt2_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                    LayerAttention& attend, const AttentionOptions& causal, const Tensor& logit_rows,
                    LayerBoundaries* boundaries) {
  const int64_t B = ids.size(0), T = ids.size(1), C = c.hidden_size, H = c.num_attention_heads,
                D = c.head_dim;
  auto w = [&](int64_t i, const std::string& rest) -> const Tensor& { return parameter(p, block(i, rest)); };
  Tensor x =
      add(embedding(parameter(p, "wte.weight"), ids), embedding(parameter(p, "wpe.weight"), positions));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    x = enter_layer(boundaries, i, x);
    const Tensor h = layer_norm(x, w(i, "ln_1.weight"), w(i, "ln_1.bias"), c.norm_eps).y;
    MatmulOptions qkv_proj;
    qkv_proj.bias = w(i, "attn.c_attn.bias");
    const std::vector<Tensor> qkv = split(conv1d(h, w(i, "attn.c_attn.weight"), qkv_proj), {C, C, C}, -1);
    const Tensor att = attend
                           .attend(i, qkv[0].reshape({B, T, H, D}), qkv[1].reshape({B, T, H, D}),
                                   qkv[2].reshape({B, T, H, D}), causal)
                           .reshape({B, T, C});
    MatmulOptions out_proj;
    out_proj.bias = w(i, "attn.c_proj.bias");
    out_proj.residual = x;
    x = conv1d(att, w(i, "attn.c_proj.weight"), out_proj);
    const Tensor h2 = layer_norm(x, w(i, "ln_2.weight"), w(i, "ln_2.bias"), c.norm_eps).y;
    MatmulOptions fc;
    fc.bias = w(i, "mlp.c_fc.bias");
    fc.activation = Activation::gelu_tanh;
    MatmulOptions mlp_proj;
    mlp_proj.bias = w(i, "mlp.c_proj.bias");
    mlp_proj.residual = x;
    x = conv1d(conv1d(h2, w(i, "mlp.c_fc.weight"), fc), w(i, "mlp.c_proj.weight"), mlp_proj);
  }
  x = enter_layer(boundaries, c.num_hidden_layers, x);
  x = layer_norm(logit_positions(x, logit_rows), parameter(p, "ln_f.weight"), parameter(p, "ln_f.bias"),
                 c.norm_eps)
          .y;
  MatmulOptions head;
  head.transpose_b = true;
  return matmul(x, c.tie_word_embeddings ? parameter(p, "wte.weight") : parameter(p, "lm_head.weight"), head);
}

}  // namespace dew::models
