// The families beyond llama through the command line: `dew generate` and `dew score` on a saved
// checkpoint give what the library gives, and `dew train` trains each from a TOML config, logging an
// experts model's routers' balance.
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/tokenizer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "io/files.h"
#include "model_dir.h"
#include "run_dew.h"
#include "train_config.h"

namespace {

using dew::testing::run_dew;

// The families added beside llama, each small, as config.json fields without the vocabulary.
const std::vector<std::pair<std::string, std::string>> kFamilies = {
    {"mixtral",
     R"("model_type":"mixtral","intermediate_size":24,"num_local_experts":4,"num_experts_per_tok":2)"},
    {"qwen3_moe", R"("model_type":"qwen3_moe","intermediate_size":48,"moe_intermediate_size":16,"head_dim":16,
        "num_experts":6,"num_experts_per_tok":3,"mlp_only_layers":[0])"},
    {"gpt_oss", R"("model_type":"gpt_oss","intermediate_size":32,"head_dim":16,"num_local_experts":4,
        "num_experts_per_tok":2,"sliding_window":4)"},
    {"glm4_moe",
     R"("model_type":"glm4_moe","intermediate_size":48,"moe_intermediate_size":16,"n_routed_experts":4,
        "num_experts_per_tok":2,"n_group":2,"topk_group":1,"first_k_dense_replace":0)"},
    {"gemma", R"("model_type":"gemma","intermediate_size":48,"head_dim":16)"},
    {"gemma2", R"("model_type":"gemma2","intermediate_size":48,"head_dim":16,"sliding_window":4)"},
    {"gemma3_text", R"("model_type":"gemma3_text","intermediate_size":48,"head_dim":16,"sliding_window":4,
        "sliding_window_pattern":2)"},
    {"olmo2", R"("model_type":"olmo2","intermediate_size":48)"},
    // no attention (its fields below are read by the others only): generation through its state
    {"mamba2", R"("model_type":"mamba2","num_heads":4,"head_dim":16,"state_size":8,"n_groups":1)"},
    // a Gated DeltaNet layer, then gated attention: generation through a state and keys
    {"qwen3_next", R"("model_type":"qwen3_next","intermediate_size":48,"head_dim":16,"num_experts":4,
        "num_experts_per_tok":2,"moe_intermediate_size":16,"shared_expert_intermediate_size":16,
        "linear_num_key_heads":1,"linear_num_value_heads":2,"linear_key_head_dim":8,"linear_value_head_dim":8,
        "full_attention_interval":2)"}};
constexpr const char* kShape = R"("hidden_size":32,"num_hidden_layers":2,"num_attention_heads":2,
    "num_key_value_heads":1,"max_position_embeddings":64)";

TEST(CliFamilies, GenerateAndScoreGiveTheLibrarysAnswers) {
  for (const auto& [family, fields] : kFamilies) {
    const std::string json = "{" + fields + "," + kShape + R"(,"vocab_size":257})";
    const std::string dir = dew::testing::model_with_tokenizer("dew_cli_family_" + family, json);
    const dew::CausalLM model = dew::CausalLM::load(dir);
    const dew::Tokenizer tokenizer = dew::Tokenizer::load(dir);
    const std::vector<int64_t> shown = dew::testing::greedy_ids(dir, "Once upon", 10);
    const dew::CommandResult generated =
        run_dew("generate --model " + dir + " --prompt 'Once upon' --max-new-tokens 10");
    ASSERT_EQ(generated.exit_code, 0) << family << generated.out;
    EXPECT_EQ(generated.out, tokenizer.decode(shown, {.skip_special_tokens = true}) + "\n") << family;

    std::ofstream(dir + "/in.jsonl") << "{\"ids\": [3, 14, 15, 9]}\n";
    const dew::CommandResult scored = run_dew("score --model " + dir + " --ids < " + dir + "/in.jsonl");
    ASSERT_EQ(scored.exit_code, 0) << family << scored.out;
    const std::vector<double> lp =
        dew::log_softmax(model.forward(dew::Tensor::from_values({3, 14, 15, 9}, {1, 4}, dew::DType::i64),
                                       dew::Tensor::from_values({0, 1, 2, 3}, {1, 4}, dew::DType::i64)),
                         -1)
            .to_f64_vector();
    const nlohmann::json line = nlohmann::json::parse(scored.out);
    ASSERT_EQ(line["logprobs"].size(), 3u) << scored.out;
    EXPECT_EQ(line["logprobs"][0].get<double>(), lp[0 * 257 + 14]) << family;
    EXPECT_EQ(line["logprobs"][2].get<double>(), lp[2 * 257 + 9]) << family;
  }
}

// `dew train` with a [model] table of each family (config.json's fields as TOML): the loss falls; an
// experts model's logged lines carry each sparse layer's tokens per expert (K assignments a token) and
// the router losses' share.
TEST(CliFamilies, TrainLowersTheLossAndLogsTheRoutersBalance) {
  for (const auto& [family, fields] : kFamilies) {
    const nlohmann::json config =
        nlohmann::json::parse("{" + fields + "," + kShape +
                              R"(,"vocab_size":300,"output_router_logits":true,"router_z_loss_coef":0.001})");
    std::string table;
    for (const auto& [key, value] : config.items()) table += key + " = " + value.dump() + "\n";
    const std::string dir = dew::testing::train_config("dew_cli_family_train", table);
    std::filesystem::remove_all(dir + "/run");
    const dew::CommandResult r = run_dew("train " + dir + "/run.toml --run-dir " + dir + "/run");
    ASSERT_EQ(r.exit_code, 0) << family << r.out;
    std::ifstream metrics(dir + "/run/metrics.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(metrics, line);) lines.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(lines.size(), 3u) << r.out;
    EXPECT_LT(lines.back()["loss"].get<double>(), lines.front()["loss"].get<double>()) << family;
    const size_t sparse_layers = family == "qwen3_moe" ? 1 : 2;  // qwen3_moe: layer 0 is dense
    const int64_t K = family == "qwen3_moe" ? 3 : 2;
    for (const nlohmann::json& line : lines) {
      if (!config.contains("num_experts_per_tok")) {
        EXPECT_FALSE(line.contains("expert_tokens")) << family;
        continue;
      }
      const auto& layers = line["expert_tokens"];
      ASSERT_EQ(layers.size(), sparse_layers) << family << line.dump();
      for (const auto& experts : layers) {
        int64_t assigned = 0;
        for (const auto& n : experts) assigned += n.get<int64_t>();
        EXPECT_EQ(assigned, 4 * 16 * K) << family << line.dump();  // a step's 64 tokens, K experts each
      }
      EXPECT_GT(line["router_loss"].get<double>(), 0.0) << family;
      EXPECT_GE(line["expert_max_violation"].get<double>(), 0.0);
    }
  }
}

}  // namespace
