// The language-model families: config.json parsing and refusals, rotary frequencies, every family's
// logits through the gate against the same model in float64, causality, gradients against central
// differences, and checkpoint load/save round trips with their refusals.
#include <dew/autodiff.h>
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <dew/safetensors.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "error_of.h"
#include "gate/catalog.h"
#include "gate/derivative_check.h"
#include "gate/gate.h"
#include "io/files.h"
#include "models/families.h"

namespace dew {
namespace {

using testing::error_of;
namespace fs = std::filesystem;

constexpr double kPi = 3.14159265358979323846;

// Tiny configs that still exercise each family's switches.
ModelConfig tiny(const std::string& family) {
  std::string json;
  if (family == "llama")  // biases everywhere, llama3 rope scaling
    json =
        R"({"model_type":"llama","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"max_position_embeddings":64,"rms_norm_eps":1e-5,
      "attention_bias":true,"mlp_bias":true,"rope_theta":500000.0,
      "rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
                      "original_max_position_embeddings":16}})";
  else if (family == "mistral")  // a sliding window shorter than the sequence, tied head
    json =
        R"({"model_type":"mistral","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":1,"sliding_window":5,"tie_word_embeddings":true})";
  else if (family == "qwen2")  // q/k/v biases, yarn
    json =
        R"({"model_type":"qwen2","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"max_position_embeddings":32,"rope_theta":10000.0,
      "rope_scaling":{"type":"yarn","factor":4.0,"original_max_position_embeddings":8}})";
  else if (family == "qwen3")  // q/k norms, head_dim != hidden/heads, dynamic NTK beyond 8 positions
    json =
        R"({"model_type":"qwen3","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":24,"max_position_embeddings":8,
      "rope_parameters":{"rope_type":"dynamic","rope_theta":1000000.0,"factor":2.0}})";
  else if (family == "gemma")  // (1 + w) norms, scaled embeddings, GeGLU, head_dim from the config
    json =
        R"({"model_type":"gemma","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":1,"head_dim":24})";
  else if (family == "gemma2")  // sandwich norms, softcaps, query scalar, alternating windows
    json =
        R"({"model_type":"gemma2","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":3,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"query_pre_attn_scalar":24,
      "attn_logit_softcapping":0.5,"final_logit_softcapping":0.5,"sliding_window":4})";
  else if (family == "gemma3_text")  // q/k norms, local and global rope bases, layer_types
    json =
        R"({"model_type":"gemma3_text","vocab_size":97,"hidden_size":64,"intermediate_size":96,
      "num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"sliding_window":4,
      "layer_types":["sliding_attention","full_attention","sliding_attention"],"rope_local_base_freq":100.0,
      "rope_scaling":{"rope_type":"linear","factor":4.0}})";
  else if (family == "olmo2")  // post-norms only, q/k norms over the whole projection
    json =
        R"({"model_type":"olmo2","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2})";
  else if (family == "gpt_oss")  // sinks, biases, alternating windows, yarn, experts (clamps: the fixture)
    json =
        R"({"model_type":"gpt_oss","vocab_size":97,"hidden_size":64,"intermediate_size":32,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"num_local_experts":4,"num_experts_per_tok":2,
      "sliding_window":5,"max_position_embeddings":64})";
  else if (family == "glm4_moe")  // grouped sigmoid routing with biases, a shared expert, a dense layer
    json =
        R"({"model_type":"glm4_moe","vocab_size":97,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"moe_intermediate_size":32,"n_routed_experts":8,
      "num_experts_per_tok":2,"n_group":4,"topk_group":2,"routed_scaling_factor":2.5,"first_k_dense_replace":1,
      "attention_bias":true,"use_qk_norm":true})";
  else if (family == "mixtral")  // 4 experts, 2 a token (renormalized), a sliding window
    json =
        R"({"model_type":"mixtral","vocab_size":97,"hidden_size":64,"intermediate_size":32,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"num_local_experts":4,"num_experts_per_tok":2,
      "sliding_window":5})";
  else if (family == "qwen3_moe")  // 6 experts, 3 a token (not renormalized), the middle layer dense
    json =
        R"({"model_type":"qwen3_moe","vocab_size":97,"hidden_size":64,"intermediate_size":96,
      "moe_intermediate_size":32,"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,
      "head_dim":24,"num_experts":6,"num_experts_per_tok":3,"mlp_only_layers":[1]})";
  else if (family == "qwen3_next")  // Gated DeltaNet around a gated attention layer, 2 value heads a key
                                    // head, K != V; experts with a gated shared expert, the middle MLP dense
    json =
        R"({"model_type":"qwen3_next","vocab_size":97,"hidden_size":64,"intermediate_size":96,
      "num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,
      "layer_types":["linear_attention","full_attention","linear_attention"],"linear_num_key_heads":2,
      "linear_num_value_heads":4,"linear_key_head_dim":8,"linear_value_head_dim":12,"num_experts":4,
      "num_experts_per_tok":2,"moe_intermediate_size":32,"shared_expert_intermediate_size":48,
      "mlp_only_layers":[1],"rope_theta":10000.0})";
  else if (family == "mamba2")  // B and C shared by groups of 4 heads, biases on both projections
    json =
        R"({"model_type":"mamba2","vocab_size":97,"hidden_size":64,"num_hidden_layers":2,"expand":2,"num_heads":8,
      "head_dim":16,"state_size":16,"n_groups":2,"conv_kernel":4,"use_bias":true})";
  else
    json = R"({"model_type":"gpt2","vocab_size":97,"n_embd":64,"n_layer":2,"n_head":4,"n_positions":32})";
  return parse_model_config(json, family + " config");
}

struct Batch {
  Tensor ids, positions;
};
Batch batch(int64_t B, int64_t T, int64_t V, uint64_t seed) {
  Tensor ids = Tensor::empty({B, T}, DType::i64);
  fill_randint(ids, {seed, 1, 0}, 0, V);
  std::vector<double> pos;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) pos.push_back(double(t + 2 * b));  // rows start at different offsets
  return {ids, Tensor::from_values(pos, {B, T}, DType::i64)};
}

// Every op pinned to its portable implementation while alive (the gate's reference arm).
struct PortableEverywhere : gate::ScopedImplOverrides {
  PortableEverywhere() : gate::ScopedImplOverrides(gate::portable_everywhere()) {}
};

TEST(ModelConfig, RealConfigsParse) {
  const ModelConfig llama = parse_model_config(
      R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","vocab_size":128256,"hidden_size":4096,
        "intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,
        "max_position_embeddings":131072,"rms_norm_eps":1e-05,"rope_theta":500000.0,"hidden_act":"silu",
        "rope_scaling":{"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
        "original_max_position_embeddings":8192,"rope_type":"llama3"},"tie_word_embeddings":false,
        "torch_dtype":"bfloat16","attention_bias":false,"mlp_bias":false,"bos_token_id":128000})",
      "llama-3.1-8b");
  EXPECT_EQ(llama.head_dim, 128);
  EXPECT_EQ(llama.num_key_value_heads, 8);
  EXPECT_EQ(llama.rope.type, "llama3");
  EXPECT_EQ(llama.dtype, "bfloat16");
  const ModelConfig qwen3 = parse_model_config(
      R"({"model_type":"qwen3","vocab_size":151936,"hidden_size":1024,"intermediate_size":3072,"num_hidden_layers":28,
        "num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,"max_position_embeddings":40960,
        "rms_norm_eps":1e-06,"rope_theta":1000000,"rope_scaling":null,"tie_word_embeddings":true,
        "use_sliding_window":false,"sliding_window":null,"attention_bias":false})",
      "qwen3-0.6b");
  EXPECT_TRUE(qwen3.qk_norm);
  EXPECT_EQ(qwen3.head_dim, 128);
  EXPECT_TRUE(qwen3.tie_word_embeddings);
  EXPECT_EQ(qwen3.rope.theta, 1e6);
  EXPECT_EQ(parse_model_config(R"({"model_type":"mistral","vocab_size":32000,"hidden_size":4096,
        "intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,
        "sliding_window":4096})",
                               "mistral-7b-v0.1")
                .sliding_window,
            4096);
  EXPECT_EQ(parse_model_config(R"({"model_type":"mistral","vocab_size":32768,"hidden_size":4096,
        "intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"sliding_window":null})",
                               "mistral-7b-v0.3")
                .sliding_window,
            0);
  const ModelConfig gpt2 = parse_model_config(
      R"({"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":12,"n_head":12,"n_positions":1024,
        "activation_function":"gelu_new","layer_norm_epsilon":1e-05})",
      "gpt2");
  EXPECT_EQ(gpt2.intermediate_size, 3072);
  EXPECT_TRUE(gpt2.tie_word_embeddings);
  // Qwen3-Next-80B-A3B: attention on every fourth layer (full_attention_interval), a quarter of each
  // head rotated, 512 experts with a gated shared expert.
  const ModelConfig next = parse_model_config(
      R"({"architectures":["Qwen3NextForCausalLM"],"attention_bias":false,"decoder_sparse_step":1,
        "full_attention_interval":4,"head_dim":256,"hidden_act":"silu","hidden_size":2048,"intermediate_size":5120,
        "linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_num_key_heads":16,"linear_num_value_heads":32,
        "linear_value_head_dim":128,"max_position_embeddings":262144,"mlp_only_layers":[],"model_type":"qwen3_next",
        "moe_intermediate_size":512,"norm_topk_prob":true,"num_attention_heads":16,"num_experts":512,
        "num_experts_per_tok":10,"num_hidden_layers":48,"num_key_value_heads":2,"output_router_logits":false,
        "partial_rotary_factor":0.25,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":10000000,
        "router_aux_loss_coef":0.001,"shared_expert_intermediate_size":512,"tie_word_embeddings":false,
        "torch_dtype":"bfloat16","use_sliding_window":false,"vocab_size":151936})",
      "qwen3-next-80b-a3b");
  ASSERT_EQ(next.delta_net.layers.size(), 48u);
  for (int64_t i = 0; i < 48; ++i) EXPECT_EQ(next.delta_net.replaces_attention(i), (i + 1) % 4 != 0) << i;
  EXPECT_EQ(next.delta_net.conv_dim(), 2 * 16 * 128 + 32 * 128);
  EXPECT_EQ(int64_t(rope_frequencies(next, 1).inv_freq.size()), 32);  // 64 of 256 dims rotate
  EXPECT_TRUE(next.decoder.norm_plus_one && next.decoder.attention_output_gate && next.qk_norm);
  EXPECT_TRUE(next.moe.shared_expert_gate && next.moe.normalize_top_k && next.moe.is_sparse(3));
  EXPECT_EQ(next.moe.shared_intermediate_size, 512);
  EXPECT_TRUE(next.has_recurrent_layers());
}

// qwen3_next: value heads that key heads do not divide, and a layer type it does not have, refused by
// field; a dense model (num_experts 0) and its written config read back as the same model.
TEST(ModelConfig, Qwen3NextFieldsAreCheckedByName) {
  const std::string base =
      R"("model_type":"qwen3_next","vocab_size":10,"hidden_size":16,"intermediate_size":32,
                              "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":8)";
  auto refusal = [&](const std::string& fields) {
    return error_of([&] { parse_model_config("{" + base + "," + fields + "}", "c.json"); });
  };
  EXPECT_NE(refusal(R"("linear_num_key_heads":2,"linear_num_value_heads":3)")
                .find("linear_num_value_heads 3 is not a multiple of linear_num_key_heads 2"),
            std::string::npos);
  EXPECT_NE(refusal(R"("layer_types":["linear_attention","sliding_attention"])")
                .find(R"(expected "linear_attention" or "full_attention")"),
            std::string::npos);
  EXPECT_NE(refusal(R"("layer_types":["linear_attention"])").find("a list of 2 entries"), std::string::npos);
  const ModelConfig dense = parse_model_config(
      "{" + base +
          R"(,"num_experts":0,"layer_types":["full_attention","linear_attention"],"linear_num_key_heads":1,
        "linear_num_value_heads":2,"linear_key_head_dim":4,"linear_value_head_dim":6,"partial_rotary_factor":1.0})",
      "c.json");
  EXPECT_FALSE(dense.moe.is_sparse(0));
  const ModelConfig again = parse_model_config(models::model_config_json(dense), "written");
  EXPECT_EQ(again.moe.num_experts, 0);
  EXPECT_EQ(again.delta_net.layers, (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(again.delta_net.value_head_dim, 6);
  EXPECT_EQ(again.rope.partial_rotary_factor, 1.0);  // not Qwen3NextConfig's default of 0.25
  EXPECT_EQ(parameter_shapes(again), parameter_shapes(dense));
}

TEST(ModelConfig, FieldsThatChangeTheMathematicsAreRefusedByName) {
  const std::string base = R"("vocab_size":10,"hidden_size":8,"intermediate_size":16,"num_hidden_layers":1,
                              "num_attention_heads":2)";
  auto refusal = [&](const std::string& json) {
    return error_of([&] { parse_model_config(json, "c.json"); });
  };
  EXPECT_NE(refusal(R"({"model_type":"falcon",)" + base + "}").find("model_type \"falcon\" is not a family"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"({"model_type":"llama","hidden_act":"gelu",)" + base + "}").find("\"hidden_act\" is gelu"),
      std::string::npos);
  EXPECT_NE(
      refusal(R"({"model_type":"llama","rope_scaling":{"rope_type":"longrope","factor":2.0},)" + base + "}")
          .find("\"rope_type\" is longrope"),
      std::string::npos);
  EXPECT_NE(
      refusal(R"({"model_type":"qwen2","use_sliding_window":true,)" + base + "}").find("use_sliding_window"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"model_type":"llama","vocab_size":10})").find("\"hidden_size\" is missing"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"model_type":"llama","num_key_value_heads":3,)" + base + "}").find("not a multiple"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"model_type":"gpt2","vocab_size":10,"scale_attn_by_inverse_layer_idx":true})")
                .find("scale_attn_by_inverse_layer_idx"),
            std::string::npos);
}

// mamba2: heads that do not fill the expanded width, groups that do not divide the heads, an
// activation or norm it does not compute, a malformed dt limit: each refused by field.
TEST(ModelConfig, Mamba2FieldsAreCheckedByName) {
  const std::string base = R"("model_type":"mamba2","vocab_size":10,"hidden_size":16,"num_hidden_layers":1,
                              "state_size":4,"expand":2)";
  auto refusal = [&](const std::string& fields) {
    return error_of([&] { parse_model_config("{" + base + "," + fields + "}", "c.json"); });
  };
  EXPECT_NE(refusal(R"("num_heads":4,"head_dim":4,"n_groups":1)")
                .find("num_heads 4 x head_dim 4 is 16; expected expand x hidden_size = 32"),
            std::string::npos);
  EXPECT_NE(refusal(R"("num_heads":4,"head_dim":8,"n_groups":3)").find("not a multiple of n_groups 3"),
            std::string::npos);
  EXPECT_NE(refusal(R"("num_heads":4,"head_dim":8,"n_groups":1,"hidden_act":"gelu")").find("hidden_act"),
            std::string::npos);
  EXPECT_NE(refusal(R"("num_heads":4,"head_dim":8,"n_groups":1,"rms_norm":false)").find("rms_norm"),
            std::string::npos);
  EXPECT_NE(refusal(R"("num_heads":4,"head_dim":8,"n_groups":1,"time_step_limit":[0.5,0.1])")
                .find("expected 0 <= low < high"),
            std::string::npos);
}

// mamba2's state space parameters start as transformers starts them: A = -1 .. -H, D = 1, and
// softplus(dt_bias) within [time_step_min, time_step_max].
TEST(CausalLM, Mamba2InitializesItsStateSpaceParametersAsTransformersDoes) {
  const CausalLM model = CausalLM::init(tiny("mamba2"), DType::f64, 3);
  const std::string p = "backbone.layers.1.mixer.";
  const std::vector<double> A_log = model.parameter(p + "A_log").to_f64_vector();
  for (size_t h = 0; h < A_log.size(); ++h) EXPECT_EQ(A_log[h], std::log(double(h + 1)));
  for (double d : model.parameter(p + "D").to_f64_vector()) EXPECT_EQ(d, 1.0);
  for (double b : model.parameter(p + "dt_bias").to_f64_vector()) {
    const double dt = std::log1p(std::exp(b));
    EXPECT_GE(dt, 0.001 * (1 - 1e-12));
    EXPECT_LE(dt, 0.1 * (1 + 1e-12));
  }
}

// qwen3_next starts as transformers' _init_weights has it: dt_bias 1, A = exp(A_log) in (0, 16), the
// gated norm's weight 1; and its norms that scale by 1 + w, like gemma's, at w = 0 (they started at 1,
// doubling every normalized activation of a fresh model).
TEST(CausalLM, NormsScalingByOnePlusWeightStartAtZeroAndDeltaNetAsTransformersDoes) {
  const CausalLM next = CausalLM::init(tiny("qwen3_next"), DType::f64, 3);
  const std::string p = "model.layers.2.linear_attn.";
  for (double b : next.parameter(p + "dt_bias").to_f64_vector()) EXPECT_EQ(b, 1.0);
  for (double w : next.parameter(p + "norm.weight").to_f64_vector()) EXPECT_EQ(w, 1.0);
  std::vector<double> A_log = next.parameter(p + "A_log").to_f64_vector();
  for (double a : A_log) EXPECT_LT(a, std::log(16.0));
  EXPECT_NE(A_log.front(), A_log.back());
  for (const std::string family : {"qwen3_next", "gemma"})
    for (const std::string name : {"model.layers.0.input_layernorm.weight", "model.norm.weight"})
      for (double w : CausalLM::init(tiny(family), DType::f32, 3).parameter(name).to_f64_vector())
        EXPECT_EQ(w, 0.0) << family << " " << name;
  for (double w : next.parameter("model.layers.1.self_attn.q_norm.weight").to_f64_vector()) EXPECT_EQ(w, 0.0);
}

// Experts: more experts a token than experts, a dense-layer index past the layers, router noise,
// each refused by field when the config is read.
TEST(ModelConfig, ExpertFieldsAreCheckedByName) {
  const std::string base = R"("vocab_size":10,"hidden_size":8,"intermediate_size":16,"num_hidden_layers":2,
                              "num_attention_heads":2)";
  auto refusal = [&](const std::string& type, const std::string& fields) {
    return error_of([&] {
      parse_model_config(R"({"model_type":")" + type + R"(",)" + fields + "," + base + "}", "c.json");
    });
  };
  EXPECT_NE(refusal("mixtral", R"("num_local_experts":4,"num_experts_per_tok":5)")
                .find("c.json: num_experts_per_tok is 5 but num_local_experts is 4"),
            std::string::npos);
  EXPECT_NE(refusal("qwen3_moe", R"("num_experts":4,"num_experts_per_tok":8)")
                .find("num_experts_per_tok is 8 but num_experts is 4"),
            std::string::npos);
  EXPECT_NE(refusal("qwen3_moe", R"("num_experts":4,"num_experts_per_tok":2,"mlp_only_layers":[2])")
                .find("\"mlp_only_layers\" holds 2; expected layer indices from 0 to 1"),
            std::string::npos);
  EXPECT_NE(refusal("mixtral", R"("router_jitter_noise":0.1)").find("\"router_jitter_noise\" is 0.1"),
            std::string::npos);
  EXPECT_NE(
      refusal("mixtral", R"("rope_scaling":{"rope_type":"su","factor":2.0})").find("\"rope_type\" is su"),
      std::string::npos);
  // What a written config says, it reads back: experts, their layers and their losses.
  const ModelConfig c = parse_model_config(
      R"({"model_type":"qwen3_moe","num_experts":6,"num_experts_per_tok":2,"moe_intermediate_size":4,
        "norm_topk_prob":true,"decoder_sparse_step":2,"mlp_only_layers":[1],"output_router_logits":true,
        "router_z_loss_coef":0.01,)" +
          base + "}",
      "c.json");
  EXPECT_FALSE(c.moe.is_sparse(0));  // (0 + 1) % 2 != 0
  EXPECT_FALSE(c.moe.is_sparse(1));  // listed in mlp_only_layers
  const ModelConfig again = parse_model_config(models::model_config_json(c), "written");
  EXPECT_EQ(again.moe.num_experts, 6);
  EXPECT_EQ(again.moe.intermediate_size, 4);
  EXPECT_EQ(again.moe.sparse_step, 2);
  EXPECT_EQ(again.moe.dense_layers, std::vector<int64_t>{1});
  EXPECT_TRUE(again.moe.normalize_top_k && again.moe.router_losses);
  EXPECT_EQ(again.moe.z_loss_coef, 0.01);
}

// Values no model computes with are refused by field when the config is read, not by an op inside the
// first forward (a negative partial_rotary_factor was an uncaught std::length_error).
TEST(ModelConfig, ValuesNoModelComputesWithAreRefusedByField) {
  const std::string base =
      R"("vocab_size":10,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2)";
  auto refusal = [&](const std::string& fields) {
    return error_of(
        [&] { parse_model_config(R"({"model_type":"llama",)" + fields + "," + base + "}", "c.json"); });
  };
  EXPECT_NE(refusal(R"("hidden_size":8,"partial_rotary_factor":-0.5)")
                .find("c.json: partial_rotary_factor is -0.5; expected a number in (0, 1]"),
            std::string::npos);
  EXPECT_NE(refusal(R"("hidden_size":6)").find("c.json: head_dim 3 (hidden_size 6 / num_attention_heads 2"),
            std::string::npos);
  EXPECT_NE(refusal(R"("hidden_size":8,"rms_norm_eps":-1e-5)")
                .find("c.json: rms_norm_eps is -1e-05; expected a positive"),
            std::string::npos);
  EXPECT_NE(refusal(R"("hidden_size":8,"rope_theta":0)").find("c.json: rope_theta is 0; expected a positive"),
            std::string::npos);
  EXPECT_NE(refusal(R"("hidden_size":8,"torch_dtype":"float8")")
                .find("c.json: torch_dtype \"float8\" is not a dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse_model_config(R"({"model_type":"gpt2","vocab_size":10,"layer_norm_epsilon":0})", "g.json");
            }).find("g.json: layer_norm_epsilon is 0"),
            std::string::npos);
}

// Sizes that follow from a config are bounded before anything is laid out from them: num_hidden_layers
// of 10^9 grew memory at 250 MB/s before any check; a model past the machine's memory is refused by
// what it would need.
TEST(ModelConfig, AbsurdSizesAreRefusedBeforeAnyAllocation) {
  EXPECT_NE(error_of([&] {
              parse_model_config(
                  R"({"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":16,
                                   "num_hidden_layers":1000000000,"num_attention_heads":2})",
                  "c.json");
            }).find("c.json: num_hidden_layers is 1000000000; expected at most 10000"),
            std::string::npos);
  const ModelConfig huge = parse_model_config(
      R"({"model_type":"llama","vocab_size":10,"hidden_size":1048576,"intermediate_size":4194304,
        "num_hidden_layers":1000,"num_attention_heads":8192})",
      "huge.json");
  const std::string e = error_of([&] { CausalLM::init(huge, DType::bf16, 1); });
  EXPECT_NE(e.find("a llama model: its 1.76e+16 parameters need"), std::string::npos) << e;
  EXPECT_NE(e.find("GiB in bf16; this machine has"), std::string::npos) << e;
}

// What Dew writes, it reads as the same model: partial_rotary_factor was dropped from the written
// config.json, so a model with half its dims rotated came back fully rotated, or refused (found by the
// model_config fuzz target).
TEST(ModelConfig, AWrittenConfigReadsBackAsTheSameModel) {
  const ModelConfig c = parse_model_config(
      R"({"model_type":"mistral","vocab_size":16000,"hidden_size":8499,"intermediate_size":64,
        "num_hidden_layers":2,"num_attention_heads":32,"num_key_value_heads":8,"sliding_window":null,
        "partial_rotary_factor":0.5})",
      "c.json");
  const ModelConfig again = parse_model_config(models::model_config_json(c), "written");
  EXPECT_EQ(again.rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(again.head_dim, c.head_dim);
  EXPECT_EQ(again.sliding_window, c.sliding_window);
}

TEST(RopeFrequencies, Llama3KeepsShortWavelengthsAndSlowsLongOnes) {
  const ModelConfig c = parse_model_config(
      R"({"model_type":"llama","vocab_size":10,"hidden_size":4096,"intermediate_size":8,"num_hidden_layers":1,
        "num_attention_heads":32,"rope_theta":500000.0,"max_position_embeddings":131072,
        "rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
        "original_max_position_embeddings":8192}})",
      "c");
  const RopeFrequencies f = rope_frequencies(c, 1);
  ModelConfig unscaled = c;
  unscaled.rope = RopeConfig{};
  unscaled.rope.theta = 500000;
  const std::vector<double> plain_freq = rope_frequencies(unscaled, 1).inv_freq;
  ASSERT_EQ(f.inv_freq.size(), 64u);
  for (size_t i = 0; i < 64; ++i) {
    const double plain = plain_freq[i], wavelen = 2 * kPi / plain;
    if (wavelen < 8192.0 / 4) {
      EXPECT_EQ(f.inv_freq[i], plain) << i;  // high frequency: kept
    }
    if (wavelen > 8192.0) {
      EXPECT_DOUBLE_EQ(f.inv_freq[i], plain / 8) << i;  // low frequency: / factor
    }
    EXPECT_LE(f.inv_freq[i], plain);
    EXPECT_GE(f.inv_freq[i], plain / 8 * (1 - 1e-15));
    if (i > 0) {
      EXPECT_LT(f.inv_freq[i], f.inv_freq[i - 1]);  // the blend keeps the order
    }
  }
  EXPECT_EQ(f.attention_factor, 1.0);
}

TEST(RopeFrequencies, LinearDynamicAndYarn) {
  auto config = [](const std::string& scaling) {
    return parse_model_config(R"({"model_type":"llama","vocab_size":10,"hidden_size":64,"intermediate_size":8,
        "num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":100,"rope_scaling":)" +
                                  scaling + "}",
                              "c");
  };
  const std::vector<double> plain = rope_frequencies(config("null"), 1).inv_freq;
  const std::vector<double> linear =
      rope_frequencies(config(R"({"type":"linear","factor":4.0})"), 1).inv_freq;
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_DOUBLE_EQ(linear[i], plain[i] / 4);
  // dynamic: unchanged within the trained length; beyond it the base grows by
  // (factor * L / trained - (factor - 1))^(d / (d - 2)).
  const ModelConfig dynamic = config(R"({"type":"dynamic","factor":2.0})");
  EXPECT_EQ(rope_frequencies(dynamic, 100).inv_freq, plain);
  const std::vector<double> longer = rope_frequencies(dynamic, 300).inv_freq;
  const double base = 10000 * std::pow(2.0 * 300 / 100 - 1, 32.0 / 30);
  EXPECT_DOUBLE_EQ(longer[5], std::pow(base, -10.0 / 32));
  // partial_rotary_factor beside rope_theta (no rope_scaling) rotates part of each head: it was once
  // read only inside rope_scaling, and dropped without one.
  const ModelConfig partial = parse_model_config(
      R"({"model_type":"llama","vocab_size":10,"hidden_size":64,"intermediate_size":8,"num_hidden_layers":1,
        "num_attention_heads":2,"partial_rotary_factor":0.5})",
      "c");
  EXPECT_EQ(rope_frequencies(partial, 1).rotary_dim, 16);
  EXPECT_EQ(rope_frequencies(config("null"), 1).rotary_dim, 32);
  // yarn: fast-rotating dims extrapolate (kept), slow ones interpolate (/ factor); cos and sin grow
  // by 0.1 ln(factor) + 1.
  const RopeFrequencies yarn = rope_frequencies(config(R"({"rope_type":"yarn","factor":4.0})"), 1);
  EXPECT_DOUBLE_EQ(yarn.attention_factor, 0.1 * std::log(4.0) + 1);
  EXPECT_DOUBLE_EQ(yarn.inv_freq[0], plain[0]);
  EXPECT_DOUBLE_EQ(yarn.inv_freq.back(), plain.back() / 4);
}

class Family : public ::testing::TestWithParam<std::string> {};

// The gate at model scale: logits at f32 and bf16 on the default routes against the same model in
// float64, with the model on portable implementations at the same dtype as the reference arm.
TEST_P(Family, LogitsPassTheGateAgainstFloat64) {
  const ModelConfig c = tiny(GetParam());
  const CausalLM initial = CausalLM::init(c, DType::f64, 7);
  const Batch in = batch(2, 13, c.vocab_size, gate::gate_seed());
  for (DType dt : {DType::f32, DType::bf16}) {
    const CausalLM model = initial.to(dt);
    const Tensor candidate = model.forward(in.ids, in.positions);
    Tensor base, truth;
    {
      PortableEverywhere portable;
      base = model.forward(in.ids, in.positions);
      truth = model.to(DType::f64).forward(in.ids, in.positions);  // the same (rounded) weights, in f64
    }
    ASSERT_EQ(candidate.shape(), (Shape{2, 13, c.vocab_size}));
    const gate::OutputReport r = gate::compare_output(candidate, base, {truth, {}, 1}, dt);
    EXPECT_EQ(r.unwritten, 0);
    EXPECT_LE(r.rms_ratio(), 1.5) << dtype_name(dt) << " rms " << r.rms_candidate() << " vs " << r.rms_base();
    EXPECT_LE(r.worst_row_ratio(), 2.0) << dtype_name(dt);
    EXPECT_GT(r.rms_base(), 0.0) << dtype_name(dt);  // the arms really differ from the truth
  }
}

// A token never sees its future: changing the last tokens leaves earlier logits bit-identical.
TEST_P(Family, LogitsAreCausal) {
  const ModelConfig c = tiny(GetParam());
  const CausalLM model = CausalLM::init(c, DType::f32, 3);
  const Batch in = batch(1, 9, c.vocab_size, 5);
  std::vector<double> ids = in.ids.to_f64_vector();
  ids[7] = double((int64_t(ids[7]) + 1) % c.vocab_size);
  ids[8] = double((int64_t(ids[8]) + 5) % c.vocab_size);
  const std::vector<double> a = model.forward(in.ids, in.positions).to_f64_vector();
  const std::vector<double> b =
      model.forward(Tensor::from_values(ids, {1, 9}, DType::i64), in.positions).to_f64_vector();
  const size_t first_changed = size_t(7 * c.vocab_size);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + first_changed, b.begin()));
  EXPECT_FALSE(std::equal(a.begin() + first_changed, a.end(), b.begin() + first_changed));
}

// Incremental decoding: a prefill of 5 tokens, then 4 single-token steps through the KV cache, give
// the logits of one full forward over the 9 tokens bit for bit (portable implementations: each row
// is computed by the same arithmetic either way; mistral's window of 5 is outgrown on the way).
TEST_P(Family, CachedDecodingMatchesTheFullForwardBitForBit) {
  ModelConfig c = tiny(GetParam());
  // Dynamic NTK scaling depends on the longest position of each call (as in transformers, whose cached
  // keys keep the frequencies they were rotated with): within the trained length it is plain rope.
  if (c.rope.type == "dynamic") c.max_position_embeddings = 64;
  const CausalLM model = CausalLM::init(c, DType::f32, 17);
  const Batch in = batch(2, 9, c.vocab_size, 19);
  PortableEverywhere portable;
  const std::vector<double> full = model.forward(in.ids, in.positions).to_f64_vector();
  KvCache cache;
  std::vector<Tensor> parts = {
      model.forward(in.ids.slice(1, 0, 5).contiguous(), in.positions.slice(1, 0, 5).contiguous(), &cache)};
  EXPECT_EQ(cache.length(), 5);
  for (int64_t t = 5; t < 9; ++t)
    parts.push_back(model.forward(in.ids.slice(1, t, t + 1).contiguous(),
                                  in.positions.slice(1, t, t + 1).contiguous(), &cache));
  EXPECT_EQ(cache.length(), 9);
  EXPECT_EQ(concat(parts, 1).to_f64_vector(), full);
}

// Greedy generation through the cache chooses what re-running the whole sequence would choose.
TEST_P(Family, GreedyGenerationMatchesRerunningTheFullSequence) {
  ModelConfig c = tiny(GetParam());
  if (c.rope.type == "dynamic") c.max_position_embeddings = 64;  // as in the cached-decoding test
  const CausalLM model = CausalLM::init(c, DType::f32, 23);
  PortableEverywhere portable;
  GenerationOptions o;
  o.max_new_tokens = 6;
  o.sampling.temperature = 0;
  const std::vector<int64_t> prompt = {3, 1, 4, 1, 5};
  const std::vector<int64_t> generated = generate(model, {prompt}, o)[0];
  std::vector<int64_t> sequence = prompt;
  for (int step = 0; step < 6; ++step) {
    const int64_t T = int64_t(sequence.size());
    std::vector<double> ids(sequence.begin(), sequence.end()), positions;
    for (int64_t t = 0; t < T; ++t) positions.push_back(double(t));
    const Tensor logits = model.forward(Tensor::from_values(ids, {1, T}, DType::i64),
                                        Tensor::from_values(positions, {1, T}, DType::i64));
    sequence.push_back(int64_t(argmax(logits.select(1, T - 1), -1).to_f64_vector()[0]));
  }
  EXPECT_EQ(generated, std::vector<int64_t>(sequence.begin() + 5, sequence.end()));
}

// Reverse mode through the whole model: every parameter gets a gradient, and the directional
// derivative matches float64 central differences.
TEST_P(Family, GradientsMatchCentralDifferences) {
  ModelConfig c = tiny(GetParam());
  c.num_hidden_layers = 1;
  const CausalLM model = CausalLM::init(c, DType::f64, 11);
  const Batch in = batch(1, 7, c.vocab_size, 13);
  std::vector<std::string> names;
  std::vector<Tensor> values;
  for (const auto& [name, t] : model.parameters()) names.push_back(name), values.push_back(t);
  const testing::Fn logits = [&](const std::vector<Tensor>& xs) {
    CausalLM m = model;
    for (size_t i = 0; i < xs.size(); ++i) m.parameters()[names[i]] = xs[i];
    return m.forward(in.ids, in.positions);
  };
  const auto failures = testing::derivative_failures(GetParam(), logits, values, {}, /*forward_mode=*/false);
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
}

// The matmul calls of one forward, by the op profile.
int64_t products_of_forward(const CausalLM& model, const Batch& in) {
  reset_op_profile();
  set_op_profiling(true);
  model.forward(in.ids, in.positions);
  set_op_profiling(false);
  int64_t calls = 0;
  for (const OpTime& r : op_profile())
    if (r.op == "matmul") calls += r.calls;
  return calls;
}

// Packed for inference, a model holds the same parameters by name and value, computes each layer's q, k
// and v (and a dense MLP's gate and up) by one product (gpt2: reads its Conv1D weights by rows), and gives
// the same logits bit for bit (portable products: each output sums its K terms in the same order
// whatever the rows beside it or the weights' layout).
TEST_P(Family, PackedProjectionsGiveTheSameLogitsFromFewerProducts) {
  const ModelConfig c = tiny(GetParam());
  const CausalLM model = CausalLM::init(c, DType::f32, 23);
  CausalLM packed = model;
  packed.pack_projections();
  for (const auto& [name, t] : model.parameters()) {
    ASSERT_EQ(packed.parameter(name).shape(), t.shape()) << name;
    EXPECT_EQ(packed.parameter(name).to_f64_vector(), t.to_f64_vector()) << name;
  }
  const Batch in = batch(2, 7, c.vocab_size, 29);
  PortableEverywhere portable;
  EXPECT_EQ(packed.forward(in.ids, in.positions).to_f64_vector(),
            model.forward(in.ids, in.positions).to_f64_vector());
  const auto shared = [&](const char* a, const char* b) {
    return packed.parameter(a).shares_storage_with(packed.parameter(b));
  };
  if (GetParam() == "gpt2" || GetParam() == "mamba2") {
    EXPECT_EQ(products_of_forward(packed, in), products_of_forward(model, in));
    if (GetParam() == "gpt2") {  // a Conv1D weight (in, out) is the transpose of its rows now
      for (const char* name : {"h.1.attn.c_attn.weight", "h.0.mlp.c_proj.weight"})
        EXPECT_TRUE(packed.parameter(name).transpose(0, 1).is_contiguous()) << name;
    }
    return;
  }
  // Layer 1 has attention in every llama family (qwen3_next: its full_attention layer).
  EXPECT_TRUE(shared("model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.v_proj.weight"));
  EXPECT_LT(products_of_forward(packed, in), products_of_forward(model, in));
}

// Packing is for inference: a model whose parameters require gradients is refused by name, and one
// whose parameters come to require them after packing computes its products one by one again, each
// weight getting its gradient.
TEST(CausalLM, PackedProjectionsLeaveTrainingAlone) {
  CausalLM model = CausalLM::init(tiny("qwen2"), DType::f32, 31);
  for (auto& [name, t] : model.parameters()) t.requires_grad_(true);
  EXPECT_NE(error_of([&] { model.pack_projections(); }).find("requires a gradient"), std::string::npos);
  for (auto& [name, t] : model.parameters()) t.requires_grad_(false);
  model.pack_projections();
  for (auto& [name, t] : model.parameters()) t.requires_grad_(true);
  const Batch in = batch(1, 5, 97, 37);
  backward(sum(model.forward(in.ids, in.positions)));
  for (const char* name : {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.bias",
                           "model.layers.0.self_attn.v_proj.weight", "model.layers.1.mlp.up_proj.weight"})
    EXPECT_TRUE(model.parameter(name).grad().defined()) << name;
}

INSTANTIATE_TEST_SUITE_P(Models, Family,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe",
                                           "gpt_oss", "glm4_moe", "gemma", "gemma2", "gemma3_text", "olmo2",
                                           "qwen3_next", "gpt2", "mamba2"));

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("dew_models_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(CausalLM, SaveThenLoadGivesByteIdenticalTensorsAndLogits) {
  for (const std::string family : {"qwen3", "gpt2", "mamba2"}) {
    const CausalLM model = CausalLM::init(tiny(family), DType::bf16, 21);
    const std::string dir = fresh_dir("round_trip_" + family);
    model.save(dir, 20'000);  // sharded
    const CausalLM back = CausalLM::load(dir);
    ASSERT_EQ(back.parameters().size(), model.parameters().size());
    for (const auto& [name, t] : model.parameters()) {
      const Tensor& u = back.parameter(name);
      ASSERT_EQ(u.dtype(), t.dtype()) << name;
      EXPECT_EQ(std::memcmp(u.raw_data(), t.raw_data(), size_t(t.numel()) * dtype_size(t.dtype())), 0)
          << name;
    }
    const Batch in = batch(1, 5, 97, 1);
    EXPECT_EQ(back.forward(in.ids, in.positions).to_f64_vector(),
              model.forward(in.ids, in.positions).to_f64_vector());
    EXPECT_EQ(CausalLM::load(dir, DType::f32)
                  .parameter(family == "gpt2"     ? "wte.weight"
                             : family == "mamba2" ? "backbone.norm_f.weight"
                                                  : "model.norm.weight")
                  .dtype(),
              DType::f32);
  }
}

// A model cast (or loaded as) another dtype saves config.json saying what its weights hold, the rest
// of the file as it was read; loaded back without a dtype, it is that dtype.
TEST(CausalLM, SavedConfigSaysTheDtypeOfTheSavedWeights) {
  const std::string dir = fresh_dir("dtype_source"), cast_dir = fresh_dir("dtype_cast");
  CausalLM::init(tiny("qwen3"), DType::f32, 3).save(dir);
  CausalLM::load(dir, DType::bf16).save(cast_dir);
  const auto config = nlohmann::json::parse(read_text_file(cast_dir + "/config.json"));
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_EQ(config["head_dim"], 24);  // the other fields are kept
  EXPECT_EQ(CausalLM::load(cast_dir).parameter("model.norm.weight").dtype(), DType::bf16);
  CausalLM::load(cast_dir).to(DType::f32).save(dir);
  EXPECT_EQ(nlohmann::json::parse(read_text_file(dir + "/config.json"))["torch_dtype"], "float32");
}

TEST(CausalLM, ACheckpointThatDoesNotMatchItsConfigIsRefusedWhole) {
  const ModelConfig c = tiny("llama");
  CausalLM model = CausalLM::init(c, DType::f32, 1);
  const std::string dir = fresh_dir("mismatch");
  model.save(dir);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : model.parameters())
    if (name != "model.norm.weight") tensors.push_back({name, t});
  tensors.push_back({"model.layers.0.self_attn.q_proj.weight_extra", Tensor::zeros({1}, DType::f32)});
  for (auto& [name, t] : tensors)
    if (name == "model.layers.1.mlp.up_proj.weight")
      t = Tensor::zeros({95, 64}, DType::f32);
    else if (name == "model.layers.0.input_layernorm.weight")  // the right shape, integers
      t = Tensor::zeros(t.shape(), DType::i32);
  fs::remove(dir + "/model.safetensors");
  save_safetensors_checkpoint(dir, tensors);
  const std::string message = error_of([&] { CausalLM::load(dir); });
  EXPECT_NE(message.find("\"model.norm.weight\" is missing (expected [64])"), std::string::npos) << message;
  EXPECT_NE(message.find("\"model.layers.1.mlp.up_proj.weight\" is [95,64] (expected [96,64])"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\"model.layers.0.input_layernorm.weight\" holds I32 (expected floating weights"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\"model.layers.0.self_attn.q_proj.weight_extra\" is not a parameter"),
            std::string::npos)
      << message;
  EXPECT_NE(error_of([&] { CausalLM::load(fresh_dir("empty")); }).find("config.json: cannot open"),
            std::string::npos);
}

// Qwen3-Next checkpoints carry a multi-token prediction head (mtp.*) that transformers does not load
// either: it is left unread, for that family only.
TEST(CausalLM, Qwen3NextCheckpointsLoadWithoutTheirMultiTokenPredictionHead) {
  for (const std::string family : {"qwen3_next", "qwen3"}) {
    const CausalLM model = CausalLM::init(tiny(family), DType::f32, 1);
    const std::string dir = fresh_dir("mtp_" + family);
    model.save(dir);
    std::vector<std::pair<std::string, Tensor>> tensors(model.parameters().begin(), model.parameters().end());
    tensors.push_back({"mtp.fc.weight", Tensor::zeros({64, 128}, DType::f32)});
    fs::remove(dir + "/model.safetensors");
    save_safetensors_checkpoint(dir, tensors);
    if (family == "qwen3_next") {
      EXPECT_EQ(CausalLM::load(dir).parameters().count("mtp.fc.weight"), 0u);
    } else {
      EXPECT_NE(error_of([&] { CausalLM::load(dir); }).find("\"mtp.fc.weight\" is not a parameter"),
                std::string::npos);
    }
  }
}

// The routers' statistics count real tokens only: K assignments each, padding left out; a router
// that scores every expert alike gives the balance loss its floor, K, and the z-loss (ln E)².
TEST(CausalLM, RouterStatisticsCountRealTokensOnly) {
  CausalLM model = CausalLM::init(tiny("mixtral"), DType::f64, 5);
  const Batch in = batch(2, 6, 97, 3);
  const Tensor segments = Tensor::from_values({0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 6}, DType::i64);
  RouterStats stats;
  model.forward(in.ids, in.positions, nullptr, segments, &stats);
  EXPECT_EQ(stats.tokens, 10);
  ASSERT_EQ(stats.expert_tokens.size(), 2u);  // both layers are sparse
  for (const auto& layer : stats.expert_tokens) EXPECT_EQ(std::accumulate(layer.begin(), layer.end(), 0), 20);
  for (const char* router :
       {"model.layers.0.block_sparse_moe.gate.weight", "model.layers.1.block_sparse_moe.gate.weight"})
    model.parameters()[router] = Tensor::zeros({4, 64}, DType::f64);
  RouterStats uniform;
  model.forward(in.ids, in.positions, nullptr, segments, &uniform);
  EXPECT_DOUBLE_EQ(load_balancing_loss(uniform).to_f64_vector()[0], 2.0);
  EXPECT_DOUBLE_EQ(router_z_loss(uniform).to_f64_vector()[0], std::log(4.0) * std::log(4.0));
  EXPECT_EQ(uniform.expert_tokens[0], (std::vector<int64_t>{10, 10, 0, 0}));  // ties go to the lower experts
}

// An expert's tensor missing or misshapen is named, like any other, before any tensor is read.
TEST(CausalLM, MissingOrMisshapenExpertTensorsAreNamed) {
  const CausalLM model = CausalLM::init(tiny("mixtral"), DType::f32, 2);
  const std::string dir = fresh_dir("mixtral_experts");
  model.save(dir);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : model.parameters())
    if (name != "model.layers.1.block_sparse_moe.experts.3.w2.weight")
      tensors.push_back({name, name == "model.layers.0.block_sparse_moe.gate.weight"
                                   ? Tensor::zeros({3, 64}, DType::f32)
                                   : t});
  fs::remove(dir + "/model.safetensors");
  save_safetensors_checkpoint(dir, tensors);
  const std::string message = error_of([&] { CausalLM::load(dir); });
  EXPECT_NE(
      message.find("\"model.layers.1.block_sparse_moe.experts.3.w2.weight\" is missing (expected [64,32])"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("\"model.layers.0.block_sparse_moe.gate.weight\" is [3,64] (expected [4,64])"),
            std::string::npos)
      << message;
}

// gpt-oss's MXFP4 experts: blocks that do not decode to the expert's shape are named with the shape
// they would need; another quantization method is refused by field.
TEST(CausalLM, MisshapenMxfp4ExpertsAndOtherQuantizationsAreRefused) {
  const fs::path fixture = fs::path(DEW_SOURCE_DIR) / "tests" / "models" / "torch_fixtures" / "gpt_oss";
  const std::string dir = fresh_dir("gpt_oss_mxfp4");
  fs::copy_file(fixture / "config.json", fs::path(dir) / "config.json");
  const SafetensorsFile file = SafetensorsFile::open((fixture / "model.safetensors").string());
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const SafetensorsEntry& e : file.header().tensors) {
    Tensor t = file.load(e.name);
    if (e.name == "model.layers.1.mlp.experts.down_proj_blocks") t = t.slice(1, 0, 16).contiguous();
    tensors.push_back({e.name, t});
  }
  save_safetensors_checkpoint(dir, tensors);
  const std::string message = error_of([&] { CausalLM::load(dir); });
  EXPECT_NE(
      message.find("\"model.layers.1.mlp.experts.down_proj_blocks\" is [4,16,1,16] (expected [4,32,1] MXFP4 "
                   "blocks of 16 bytes, decoding to [4,32,32])"),
      std::string::npos)
      << message;
  std::string config = read_text_file(dir + "/config.json");
  config.replace(config.find("\"mxfp4\""), 7, "\"awq\"");
  std::ofstream(dir + "/config.json") << config;
  EXPECT_NE(error_of([&] { CausalLM::load(dir); }).find("\"quant_method\" is awq"), std::string::npos);
}

// A gemma3 (image and text) checkpoint runs as its text model: the text_config, the weights under
// language_model. (older files) or model.language_model. (newer), the image half left unread; the
// logits are the gemma3_text checkpoint's, and it saves as one.
TEST(CausalLM, Gemma3CheckpointsRunTheirTextModel) {
  const fs::path fixture = fs::path(DEW_SOURCE_DIR) / "tests" / "models" / "torch_fixtures" / "gemma3_text";
  const CausalLM text = CausalLM::load(fixture.string());
  const Batch in = batch(1, 6, 61, 3);
  const std::vector<double> expected = text.forward(in.ids, in.positions).to_f64_vector();
  const nlohmann::json text_config =
      nlohmann::json::parse(read_text_file((fixture / "config.json").string()));
  const SafetensorsFile file = SafetensorsFile::open((fixture / "model.safetensors").string());
  for (const bool newer : {false, true}) {
    const std::string dir = fresh_dir(newer ? "gemma3_newer" : "gemma3_older");
    std::ofstream(dir + "/config.json") << nlohmann::json{
        {"model_type", "gemma3"},
        {"text_config", text_config},
        {"torch_dtype", "float32"}}.dump();
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const SafetensorsEntry& e : file.header().tensors)
      tensors.push_back({newer ? "model.language_model." + e.name.substr(6) : "language_model." + e.name,
                         file.load(e.name)});
    tensors.push_back({newer ? "model.vision_tower.patch.weight" : "vision_tower.patch.weight",
                       Tensor::zeros({4, 4}, DType::f32)});
    save_safetensors_checkpoint(dir, tensors);
    const CausalLM model = CausalLM::load(dir);
    EXPECT_EQ(model.config().model_type, "gemma3_text");
    EXPECT_EQ(model.forward(in.ids, in.positions).to_f64_vector(), expected) << newer;
    model.save(dir + "/text");
    EXPECT_EQ(CausalLM::load(dir + "/text").forward(in.ids, in.positions).to_f64_vector(), expected);
  }
}

TEST(CausalLM, Gpt2CheckpointsWithTheTransformerPrefixLoad) {
  const CausalLM model = CausalLM::init(tiny("gpt2"), DType::f32, 2);
  const std::string dir = fresh_dir("gpt2_prefix");
  model.save(dir);  // config.json, then the tensors replaced by GPT2LMHeadModel's names
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : model.parameters()) tensors.push_back({"transformer." + name, t});
  tensors.push_back({"lm_head.weight", model.parameter("wte.weight")});  // tied, yet saved by some writers
  save_safetensors_checkpoint(dir, tensors);
  const CausalLM back = CausalLM::load(dir);
  const Batch in = batch(1, 4, 97, 3);
  EXPECT_EQ(back.forward(in.ids, in.positions).to_f64_vector(),
            model.forward(in.ids, in.positions).to_f64_vector());
}

// A prompt's sampled tokens do not depend on the batch it runs in, and generation stops at an
// end-of-sequence id (kept in the output).
TEST(Generate, SampledTokensDoNotDependOnTheBatchAndStopAtEos) {
  const CausalLM model = CausalLM::init(tiny("llama"), DType::f32, 29);
  GenerationOptions o;
  o.max_new_tokens = 8;
  o.sampling.temperature = 0.8;
  o.sampling.seed = 3;
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3}, {9, 8, 7}, {5, 5, 5}, {0, 96, 1}};
  o.sequence_ids = {10, 11, 12, 13};
  const auto together = generate(model, prompts, o);
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationOptions alone = o;
    alone.sequence_ids = {o.sequence_ids[i]};
    EXPECT_EQ(generate(model, {prompts[i]}, alone)[0], together[i]) << "prompt " << i;
  }
  GenerationOptions stop = o;
  stop.sequence_ids = {o.sequence_ids[0]};
  stop.eos_ids = {together[0][2]};
  const auto stopped = generate(model, {prompts[0]}, stop)[0];
  ASSERT_LE(stopped.size(), 3u);
  EXPECT_EQ(stopped.back(), together[0][2]);
  EXPECT_NE(testing::error_of([&] {
              generate(model, {{1, 2}, {}}, o);
            }).find("an empty prompt"),
            std::string::npos);
}

// A token budget below 1 or past kMaxNewTokens is refused by name, not answered with nothing.
TEST(Generate, RefusesATokenBudgetOutsideOneToTheCap) {
  const CausalLM model = CausalLM::init(tiny("llama"), DType::f32, 29);
  for (int64_t budget : {int64_t(0), int64_t(-5), kMaxNewTokens + 1}) {
    GenerationOptions o;
    o.max_new_tokens = budget;
    EXPECT_NE(testing::error_of([&] {
                generate(model, {{1, 2}}, o);
              }).find(fmt::format("max_new_tokens {}; expected 1 to {}", budget, kMaxNewTokens)),
              std::string::npos)
        << budget;
  }
}

// Prompts of different lengths in one batch (left-padded, NOTE [padding]): each row samples the
// tokens it samples alone, for every family (gpt2's learned positions and mistral's window included).
TEST_P(Family, PaddedBatchGivesEachPromptItsTokensAlone) {
  const CausalLM model = CausalLM::init(tiny(GetParam()), DType::f32, 31);
  GenerationOptions o;
  o.max_new_tokens = 6;
  o.sampling.temperature = 0.9;
  o.sampling.seed = 5;
  const std::vector<std::vector<int64_t>> prompts = {
      {4, 8, 15, 16, 23, 42, 7, 9}, {3}, {1, 2, 3, 4, 5}, {96, 0}};
  o.sequence_ids = {20, 21, 22, 23};
  const auto together = generate(model, prompts, o);
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationOptions alone = o;
    alone.sequence_ids = {o.sequence_ids[i]};
    EXPECT_EQ(generate(model, {prompts[i]}, alone)[0], together[i]) << "prompt " << i;
  }
}

// The logits of a padded row's tokens are those of the row alone — bit for bit on the portable
// implementations, where the padding's keys are skipped and nothing else changes.
TEST_P(Family, PaddingDoesNotChangeARowsLogits) {
  PortableEverywhere portable;
  const CausalLM model = CausalLM::init(tiny(GetParam()), DType::f32, 37);
  const std::vector<double> ids = {0, 0, 0, 11, 12, 13, 14, 20, 21, 22, 23, 24, 25, 26};
  const std::vector<double> positions = {0, 0, 0, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6};
  const std::vector<double> segments = {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const Tensor padded = model.forward(Tensor::from_values(ids, {2, 7}, DType::i64),
                                      Tensor::from_values(positions, {2, 7}, DType::i64), nullptr,
                                      Tensor::from_values(segments, {2, 7}, DType::i64));
  const Tensor alone = model.forward(Tensor::from_values({11, 12, 13, 14}, {1, 4}, DType::i64),
                                     Tensor::from_values({0, 1, 2, 3}, {1, 4}, DType::i64));
  EXPECT_EQ(padded.slice(0, 0, 1).slice(1, 3, 7).contiguous().to_f64_vector(), alone.to_f64_vector());
}

// HeldParameters: a model made or loaded holding some parameters has their values exactly (each draws
// from its own stream) and only the others' shapes, their bytes never allocated for good.
TEST(CausalLM, InitAndLoadHoldOnlyTheParametersAskedFor) {
  const ModelConfig c = tiny("llama");
  const CausalLM whole = CausalLM::init(c, DType::f32, 5);
  const HeldParameters held = [](const std::string& name) {
    return name.find("layers.1.") != std::string::npos;
  };
  const std::string dir = ::testing::TempDir() + "/held_parameters";
  fs::remove_all(dir);
  whole.save(dir);
  for (const CausalLM& part : {CausalLM::init(c, DType::f32, 5, held), CausalLM::load(dir, DType::f32, held)})
    for (const auto& [name, t] : whole.parameters()) {
      const Tensor& p = part.parameters().at(name);
      EXPECT_EQ(p.shape(), t.shape()) << name;
      EXPECT_EQ(p.storage_released(), !held(name)) << name;
      if (held(name)) {
        EXPECT_EQ(p.to_f64_vector(), t.to_f64_vector()) << name;
      }
    }
}

// LayerBoundaries: each family's forward enters layer 0 .. L in order, and every parameter of a layer
// is named as layer_of_parameter reads it (the gathers of parameter sharding rely on both).
struct EnteredLayers : LayerBoundaries {
  std::vector<int64_t> entered;
  Tensor enter(int64_t layer, const Tensor& x) override {
    entered.push_back(layer);
    return x;
  }
};

TEST(CausalLM, ForwardEntersEachLayerInOrderAndParametersNameTheirLayer) {
  for (const std::string family : {"llama", "gpt2", "mistral", "mamba2"}) {
    CausalLM model = CausalLM::init(tiny(family), DType::f32, 1);
    EnteredLayers boundaries;
    model.set_layer_boundaries(&boundaries);
    const Tensor ids = Tensor::from_values({1, 2, 3}, {1, 3}, DType::i64);
    const Tensor positions = Tensor::from_values({0, 1, 2}, {1, 3}, DType::i64);
    const Tensor with = model.forward(ids, positions);
    EXPECT_EQ(boundaries.entered, (std::vector<int64_t>{0, 1, 2})) << family;
    model.set_layer_boundaries(nullptr);
    EXPECT_EQ(with.to_f64_vector(), model.forward(ids, positions).to_f64_vector()) << family;
    std::map<int64_t, int> per_layer;
    for (const auto& [name, t] : model.parameters()) ++per_layer[layer_of_parameter(name)];
    EXPECT_EQ(per_layer.size(), 3u) << family << ": layers 0 and 1, and the rest";
    EXPECT_EQ(per_layer[0], per_layer[1]) << family;
    EXPECT_GT(per_layer[-1], 0) << family << ": embeddings and the final norm";
  }
  EXPECT_EQ(layer_of_parameter("model.language_model.layers.12.mlp.up_proj.weight"), 12);
  EXPECT_EQ(layer_of_parameter("blocks.3.attn.qkv.weight"), 3);
  EXPECT_EQ(layer_of_parameter("down_blocks.0.resnets.1.conv1.weight"), -1);
  EXPECT_EQ(layer_of_parameter("model.embed_tokens.weight"), -1);
}

}  // namespace
}  // namespace dew
