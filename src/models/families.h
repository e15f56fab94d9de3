// The families behind CausalLM: each lists the parameters it needs (Hugging Face names and shapes)
// and computes logits from them with Dew's ops. Internal to src/models.
#pragma once

#include <dew/models.h>
#include <dew/ops.h>
#include <dew/runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dew::models {

using Parameters = std::map<std::string, Tensor>;
using ParameterShapes = std::vector<std::pair<std::string, Shape>>;

// llama, mistral, qwen2, qwen3: one decoder (RMSNorm, rotary GQA attention, SwiGLU MLP) with switches.
ParameterShapes llama_parameter_shapes(const ModelConfig& c);
// `mask`: causal, with the segment ids of padded rows when there are some (CausalLM::forward); each
// layer's attention goes through `attend`; with `logit_rows`, only those positions' logits (T' = K).
// mixtral and qwen3_moe are this decoder with experts in place of the MLP (c.moe.is_sparse); `router`
// collects their routers' statistics (RouterStats).
// `boundaries` (may be null) is entered at each layer (LayerBoundaries); with `tensor`, p holds this
// rank's slices (CausalLM::tensor_shard) and the sub-blocks' outputs are summed over its group.
// qwen3_next's Gated DeltaNet layers mix through attend.mix.
Tensor llama_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                     LayerAttention& attend, AttentionOptions mask, const Tensor& logit_rows,
                     LayerBoundaries* boundaries = nullptr, RouterStats* router = nullptr,
                     TensorParallel* tensor = nullptr);

// Each attention layer's q, k and v weights (and biases) laid out one after another in one tensor, and
// each dense MLP's gate and up, the parameters becoming views of it (CausalLM::pack_projections).
void pack_llama_projections(const ModelConfig& c, Parameters& p);

// qwen3_next's Gated DeltaNet layer `layer` (c.delta_net; gated_delta_net.cc): its parameters' names
// and shapes appended to `shapes`; transformers' initialization of those it does not draw as std-0.02
// normals (dt_bias and the gated norm at 1, A_log = log U(0, 16)); and its mixing of h (B,T,C) ->
// (B,T,value_dim), the out-projection's input. `segments` (B,T) or undefined: documents restart the
// state; with `cache`, its conv_inputs and states at `layer` (grown to hold it) are continued and
// replaced, the inputs kept as last_document_window says.
void gated_delta_net_parameter_shapes(const ModelConfig& c, int64_t layer, ParameterShapes& shapes);
std::optional<Tensor> gated_delta_net_initial_value(const std::string& name, const Shape& shape, DType dtype,
                                                    RandomKey key);
Tensor gated_delta_net(const ModelConfig& c, const Parameters& p, int64_t layer, const Tensor& h,
                       const Tensor& segments, KvCache* cache);

// One layer's experts: the router (E,C) and each expert's SwiGLU matrices stacked, gate and up
// (E,F,C), down (E,C,F) (as nn.Linear stores them); gpt_oss: the router's bias (E), gate_up (E,C,2F)
// with gate and up interleaved, down (E,F,C) (as x @ W reads them), and their biases (E,2F), (E,C).
struct ExpertWeights {
  Tensor router, router_bias, gate, up, gate_up, gate_up_bias, down, down_bias;
  Tensor score_bias;  // glm4_moe: (E) added to the scores for the choice only
};
// The mixture-of-experts MLP over tokens h (N,C) -> (N,C): router in f32, softmax, top K (renormalized
// when c.normalize_top_k; gpt_oss: the softmax of the K largest logits; glm4_moe: sigmoid scores,
// group-limited, biased choice), tokens sorted by expert through grouped products, summed back
// weighted (a shared expert runs beside them in the decoder, llama.cc).
// `counted` (N) u8 marks the tokens `stats` counts (empty: all).
Tensor moe_mlp(const Tensor& h, const ExpertWeights& w, const MoeConfig& c,
               const std::vector<uint8_t>& counted, RouterStats* stats);
// gpt-oss's MXFP4 expert weights `name`_blocks and `name`_scales decoded to f32 (mxfp4.cc); a
// misshapen pair is refused naming `name`.
Tensor decode_mxfp4(const Tensor& blocks, const Tensor& scales, const std::string& name);

// The matrices named by name(e) for e < E, stacked along a new first axis (differentiable).
Tensor stack_experts(const Parameters& p, int64_t E, const std::function<std::string(int64_t)>& name);

// gpt2: learned positions, LayerNorm, fused qkv (Conv1D weights stored (in, out)), tanh-GELU MLP.
ParameterShapes gpt2_parameter_shapes(const ModelConfig& c);
// Each Conv1D weight (in, out) laid out as its (out, in) rows, the parameter becoming their transposed
// view (CausalLM::pack_projections): nn.Linear's layout, which the decode kernels read.
void pack_gpt2_projections(const ModelConfig& c, Parameters& p);
Tensor gpt2_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                    LayerAttention& attend, const AttentionOptions& mask, const Tensor& logit_rows,
                    LayerBoundaries* boundaries = nullptr);

// mamba2: Mamba-2's state space layers (SsmConfig), each mixing through attend.mix (the segments it
// gives restart the state at each packed document or a left-padded row's real tokens; the cache it
// gives is continued and replaced).
ParameterShapes mamba2_parameter_shapes(const ModelConfig& c);
Tensor mamba2_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, LayerAttention& attend,
                      const Tensor& logit_rows, LayerBoundaries* boundaries = nullptr);
// transformers' initialization of the parameters it does not draw as std-0.02 normals: A_log (A = -1 to
// -H), D (ones), dt_bias (softplus^-1 of a log-uniform dt), the convolution (U(-1/sqrt(W), 1/sqrt(W)));
// nothing for the others.
std::optional<Tensor> mamba2_initial_value(const ModelConfig& c, const std::string& name, const Shape& shape,
                                           DType dtype, RandomKey key);

// x past layer `layer`'s boundary: boundaries->enter(layer, x), or x when there are none.
inline Tensor enter_layer(LayerBoundaries* boundaries, int64_t layer, const Tensor& x) {
  return boundaries ? boundaries->enter(layer, x) : x;
}

// The batch a cache holds: its first layer's with keys or a state (0 when it holds none yet).
int64_t cached_batch(const KvCache& cache);

// The rows of (B,T,C) hidden states whose logits are wanted: all of them, or `rows` (K) of T.
Tensor logit_positions(const Tensor& x, const Tensor& rows);

// A parameter by name; throws naming the model's family and the missing name (a bug, not user input,
// once load() has checked the names).
const Tensor& parameter(const Parameters& p, const std::string& name);

// config.json text for a config (the fields transformers needs to load the model back).
std::string model_config_json(const ModelConfig& c);

}  // namespace dew::models
