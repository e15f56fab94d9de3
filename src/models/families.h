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
// `mask`: causal, with the segment ids of padded rows when there are some (CausalLM::forward).
Tensor llama_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                     KvCache* cache, AttentionOptions mask);

// gpt2: learned positions, LayerNorm, fused qkv (Conv1D weights stored (in, out)), tanh-GELU MLP.
ParameterShapes gpt2_parameter_shapes(const ModelConfig& c);
Tensor gpt2_forward(const ModelConfig& c, const Parameters& p, const Tensor& ids, const Tensor& positions,
                    KvCache* cache, const AttentionOptions& mask);

// Layer i's keys and values after the cached ones (and the cache grown by them); as given without one.
std::pair<Tensor, Tensor> with_cache(KvCache* cache, int64_t layer, const Tensor& k, const Tensor& v);

// A parameter by name; throws naming the model's family and the missing name (a bug, not user input,
// once load() has checked the names).
const Tensor& parameter(const Parameters& p, const std::string& name);

// config.json text for a config (the fields transformers needs to load the model back).
std::string model_config_json(const ModelConfig& c);

}  // namespace dew::models
