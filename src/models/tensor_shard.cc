// Tensor parallelism's split of a llama-family model (models.h): which parameters split along which
// dimension, and a rank's slices of them. The forward's side is in llama.cc.
#include <dew/models.h>

#include <string_view>

namespace dew {

int tensor_parallel_dim(const std::string& name) {
  const auto ends = [&](std::string_view suffix) { return name.ends_with(suffix); };
  for (const char* column :
       {".self_attn.q_proj.", ".self_attn.k_proj.", ".self_attn.v_proj.", ".mlp.gate_proj.", ".mlp.up_proj."})
    if (ends(std::string(column) + "weight") || ends(std::string(column) + "bias")) return 0;
  if (ends(".self_attn.o_proj.weight") || ends(".mlp.down_proj.weight")) return 1;
  return -1;  // their biases are added once, after the sum
}

Tensor tensor_parallel_part(const std::string& name, const Tensor& whole, int64_t rank, int64_t ranks) {
  const int dim = tensor_parallel_dim(name);
  if (dim < 0) return whole;
  const int64_t n = whole.size(dim) / ranks;
  return whole.detach().slice(dim, rank * n, (rank + 1) * n).clone();  // its own bytes: the whole can go
}

CausalLM CausalLM::tensor_shard(TensorParallel& group) const {
  const ModelConfig& c = config_;
  const int64_t P = group.size(), r = group.rank();
  DEW_REQUIRE(!tensor_, "[model] tensor_shard of a model that is already one rank's part");
  DEW_REQUIRE(c.model_type != "gpt2" && !c.has_recurrent_layers(),
              "[model] tensor parallelism covers the llama-family blocks, not {}'s", c.model_type);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    DEW_REQUIRE(
        !c.moe.is_sparse(i),
        "[model] {} layer {} holds experts; tensor parallelism covers dense llama-family blocks (shard "
        "experts with data parallelism)",
        c.model_type, i);
  DEW_REQUIRE(
      !c.decoder.attention_sinks && !(c.qk_norm && c.decoder.qk_norm_whole),
      "[model] {}'s attention sinks or whole-projection q/k norms are not split by tensor parallelism yet",
      c.model_type);
  DEW_REQUIRE(
      c.num_attention_heads % P == 0 && c.num_key_value_heads % P == 0 && c.intermediate_size % P == 0,
      "[model] {} attention heads, {} key-value heads and {} hidden units do not split among {} "
      "tensor-parallel ranks; expected each a multiple of {}",
      c.num_attention_heads, c.num_key_value_heads, c.intermediate_size, P, P);
  CausalLM m = *this;
  m.tensor_ = &group;
  for (auto& [name, t] : m.parameters_) {
    if (tensor_parallel_dim(name) < 0) continue;
    const bool leaf_wants_grad = t.requires_grad();
    t = tensor_parallel_part(name, t, r, P);
    if (leaf_wants_grad) t.requires_grad_();
  }
  return m;
}

}  // namespace dew
