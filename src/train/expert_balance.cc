// Auxiliary-loss-free balancing of experts (DeepSeek-V3, "Auxiliary-Loss-Free Load Balancing
// Strategy for Mixture-of-Experts"): each expert's score bias, which only chooses experts and never
// weighs them, moves by a fixed step against its load after every optimizer step. No gradient is
// involved, so the biases are buffers: outside the optimizer, saved in checkpoints.
#include <dew/error.h>
#include <dew/train.h>

namespace dew::train {

void update_expert_biases(CausalLM& model, const std::vector<std::vector<int64_t>>& expert_tokens,
                          double rate) {
  const ModelConfig& c = model.config();
  if (!c.moe.sigmoid_scores || rate == 0 || expert_tokens.empty()) return;
  size_t sparse = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    if (!c.moe.is_sparse(i)) continue;
    DEW_REQUIRE(sparse < expert_tokens.size(), "[train] {} sparse layers' loads for a model with more",
                expert_tokens.size());
    const std::vector<int64_t>& load = expert_tokens[sparse++];
    Tensor& bias = model.parameters().at(fmt::format("model.layers.{}.mlp.gate.e_score_correction_bias", i));
    DEW_REQUIRE(bias.dtype() == DType::f32 && bias.is_contiguous() && bias.numel() == int64_t(load.size()),
                "[train] layer {}'s expert biases are {}; expected f32 ({})", i, bias.describe(),
                load.size());
    double mean = 0;
    for (const int64_t n : load) mean += double(n) / double(load.size());
    Tensor host = bias.to(Device::cpu()).contiguous().clone();  // the model may live on a GPU
    float* b = host.data<float>();
    for (size_t e = 0; e < load.size(); ++e) {
      const double n = double(load[e]);
      b[e] += float(n < mean ? rate : n > mean ? -rate : 0.0);
    }
    bias.copy_from(host.to(bias.device()));
    bias.bump_version();
  }
}

}  // namespace dew::train
