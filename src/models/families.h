// The families behind CausalLM: each lists the parameters it needs (Hugging Face names and shapes)
// and computes logits from them with Dew's ops. Internal to src/models.
#pragma once

#include <dew/models.h>
#include <dew/ops.h>

#include <map>
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
Tensor llama_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                     LayerAttention& attend, AttentionOptions mask, const Tensor& logit_rows);

// gpt2: learned positions, LayerNorm, fused qkv (Conv1D weights stored (in, out)), tanh-GELU MLP.
ParameterShapes gpt2_parameter_shapes(const ModelConfig& c);
Tensor gpt2_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                    LayerAttention& attend, const AttentionOptions& mask, const Tensor& logit_rows);

// The rows of (B,T,C) hidden states whose logits are wanted: all of them, or `rows` (K) of T.
Tensor logit_positions(const Tensor& x, const Tensor& rows);

// A parameter by name; throws naming the model's family and the missing name (a bug, not user input,
// once load() has checked the names).
const Tensor& parameter(const Parameters& p, const std::string& name);

// config.json text for a config (the fields transformers needs to load the model back).
std::string model_config_json(const ModelConfig& c);

}  // namespace dew::models
