// Auxiliary-loss-free balancing: each expert's score bias moves by the rate against its load, layer by
// layer, and a model without such biases is left alone; the biases stay out of the optimizer.
#include <dew/models.h>
#include <dew/train.h>
#include <gtest/gtest.h>

namespace dew::train {
namespace {

ModelConfig glm(int64_t first_dense) {
  return parse_model_config(
      R"({"model_type":"glm4_moe","vocab_size":16,"hidden_size":16,"intermediate_size":16,"num_hidden_layers":3,
        "num_attention_heads":2,"moe_intermediate_size":8,"n_routed_experts":4,"num_experts_per_tok":2,
        "first_k_dense_replace":)" +
          std::to_string(first_dense) + "}",
      "glm");
}

TEST(ExpertBalance, EachBiasMovesByTheRateAgainstItsLoad) {
  CausalLM model = CausalLM::init(glm(1), DType::f32, 1);  // layers 1 and 2 are sparse
  // Layer 1: loads 6, 1, 1, 0 (mean 2); layer 2: all equal.
  update_expert_biases(model, {{6, 1, 1, 0}, {2, 2, 2, 2}}, 0.25);
  EXPECT_EQ(model.parameter("model.layers.1.mlp.gate.e_score_correction_bias").to_f64_vector(),
            (std::vector<double>{-0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(model.parameter("model.layers.2.mlp.gate.e_score_correction_bias").to_f64_vector(),
            (std::vector<double>{0, 0, 0, 0}));
  update_expert_biases(model, {{0, 0, 0, 8}, {2, 2, 2, 2}}, 0.25);
  EXPECT_EQ(model.parameter("model.layers.1.mlp.gate.e_score_correction_bias").to_f64_vector(),
            (std::vector<double>{0, 0.5, 0.5, 0}));
  // A softmax-routed model has no biases: nothing to move, nothing refused.
  CausalLM mixtral = CausalLM::init(
      parse_model_config(R"({"model_type":"mixtral","vocab_size":16,"hidden_size":16,"intermediate_size":8,
        "num_hidden_layers":1,"num_attention_heads":2,"num_local_experts":4})",
                         "mixtral"),
      DType::f32, 1);
  update_expert_biases(mixtral, {{4, 0, 0, 0}}, 0.25);
}

TEST(ExpertBalance, TheBiasesAreNotTrainedByTheOptimizer) {
  CausalLM model = CausalLM::init(glm(0), DType::f32, 1);
  const std::vector<Param> params = default_groups(model.parameters(), 0.1);
  size_t biases = 0;
  for (const auto& [name, t] : model.parameters()) biases += is_buffer(name);
  EXPECT_EQ(biases, 3u);
  EXPECT_EQ(params.size(), model.parameters().size() - biases);
  for (const Param& p : params) EXPECT_FALSE(is_buffer(p.name)) << p.name;
}

}  // namespace
}  // namespace dew::train
