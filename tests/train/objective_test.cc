// The next-token objective over packed batches: targets only within a document, padding inert.
#include <dew/autodiff.h>
#include <dew/train.h>
#include <gtest/gtest.h>

namespace dew::train {
namespace {

CausalLM tiny_model() {
  return CausalLM::init(parse_model_config(R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 16,
      "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
      "max_position_embeddings": 16})",
                                           "test"),
                        DType::f32, 3);
}

// One row of T+1 = 8 tokens: a document of 3, one of 3, and 2 of padding.
data::Batch packed(std::vector<double> tokens) {
  data::Batch b;
  b.tokens = Tensor::from_values(tokens, {1, 8}, DType::i64);
  b.segment_ids = Tensor::from_values({1, 1, 1, 2, 2, 2, 0, 0}, {1, 8}, DType::i64);
  b.positions = Tensor::from_values({0, 1, 2, 0, 1, 2, 0, 0}, {1, 8}, DType::i64);
  return b;
}

TEST(LmObjective, TargetsStayInsideDocuments) {
  const Tensor targets = next_token_targets(packed({5, 6, 7, 8, 9, 10, 0, 0}));
  EXPECT_EQ(targets.to_f64_vector(), (std::vector<double>{6, 7, -100, 9, 10, -100, -100}));
}

TEST(LmObjective, PaddingNeverChangesTheLossAndGradientsFlow) {
  const CausalLM model = tiny_model();
  const LmLoss a = lm_loss(model, packed({5, 6, 7, 8, 9, 10, 0, 0}));
  const LmLoss b = lm_loss(model, packed({5, 6, 7, 8, 9, 10, 31, 17}));
  EXPECT_EQ(a.loss.to_f64_vector(), b.loss.to_f64_vector());
  EXPECT_EQ(a.targets, 4);
  EXPECT_LE(a.correct, 4);
  const LmLoss other = lm_loss(model, packed({5, 6, 7, 8, 9, 11, 0, 0}));
  EXPECT_NE(a.loss.to_f64_vector(), other.loss.to_f64_vector()) << "a real target changed";
  const LmLoss z = lm_loss(model, packed({5, 6, 7, 8, 9, 10, 0, 0}), {.z_loss = 1e-2});
  EXPECT_GT(z.loss.to_f64_vector()[0], a.loss.to_f64_vector()[0]);

  CausalLM trained = tiny_model();
  for (auto& [name, p] : trained.parameters()) p.requires_grad_();
  backward(lm_loss(trained, packed({5, 6, 7, 8, 9, 10, 0, 0})).loss);
  const Tensor g = trained.parameters().at("model.embed_tokens.weight").grad();
  ASSERT_TRUE(g.defined());
  double row5 = 0, row31 = 0;  // token 5 is an input; 31 appears nowhere
  for (int64_t c = 0; c < 16; ++c)
    row5 += std::abs(g.to_f64_vector()[size_t(5 * 16 + c)]),
        row31 += std::abs(g.to_f64_vector()[size_t(31 * 16 + c)]);
  EXPECT_GT(row5, 0);
  EXPECT_EQ(row31, 0);
}

TEST(LmObjective, TrainingFlopsCountEveryMatrixAndAttention) {
  // hidden 16, 2 heads of 8, 1 KV head, MLP 32, vocab 32, untied, 1 layer:
  // q 256 + k 128 + v 128 + o 256 + gate, up, down 3 x 512 + head 512 = 2816 weights that multiply.
  EXPECT_EQ(training_flops_per_token(tiny_model(), 7), 6.0 * 2816 + 12.0 * 1 * 2 * 8 * 7);
}

// mamba2: its matrices but the embedding table (backbone.embeddings, a lookup that multiplies nothing
// and takes no weight decay), the tied head once, and its state where attention's keys would be.
TEST(LmObjective, Mamba2FlopsCountItsStateAndNotItsEmbeddingTable) {
  CausalLM model = CausalLM::init(
      parse_model_config(R"({"model_type":"mamba2","vocab_size":10,"hidden_size":32,"num_hidden_layers":1,
        "num_heads":4,"head_dim":16,"state_size":8,"n_groups":1,"tie_word_embeddings":true})",
                         "mamba2 config"),
      DType::f32, 1);
  // in_proj (64 + 80 + 4) x 32 = 4736, the convolution 80 x 4 = 320, out_proj 32 x 64 = 2048, the
  // tied head 10 x 32 = 320; the state: 12 L H P N = 12 x 4 x 16 x 8.
  EXPECT_EQ(training_flops_per_token(model, 7), 6.0 * (4736 + 320 + 2048 + 320) + 12.0 * 4 * 16 * 8);
  for (const Param& p : default_groups(model.parameters(), 0.1)) {
    if (p.name == "backbone.embeddings.weight") {
      EXPECT_EQ(p.weight_decay, 0.0);
    }
  }
}

// qwen3_next: attention's keys on its full-attention layers only, a Gated DeltaNet's state (18 H K V:
// three state products a token, forward and backward) on the others.
TEST(LmObjective, HybridFlopsCountAttentionAndDeltaNetLayersEach) {
  const CausalLM model = CausalLM::init(
      parse_model_config(
          R"({"model_type":"qwen3_next","vocab_size":10,"hidden_size":16,"intermediate_size":32,
        "num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":8,"num_experts":0,
        "layer_types":["linear_attention","full_attention"],"linear_num_key_heads":1,"linear_num_value_heads":2,
        "linear_key_head_dim":4,"linear_value_head_dim":6,"linear_conv_kernel_dim":4})",
          "qwen3_next config"),
      DType::f32, 1);
  // Layer 0: in_proj_qkvz (8 + 24) x 16 = 512, in_proj_ba 4 x 16 = 64, conv 20 x 4 = 80, out_proj 16 x 12
  // = 192; layer 1: q 32 x 16 = 512, k 128, v 128, o 256; each MLP 3 x 512; the head 160.
  const double matrices = 512 + 64 + 80 + 192 + 512 + 128 + 128 + 256 + 2 * 1536 + 160;
  EXPECT_EQ(training_flops_per_token(model, 7), 6.0 * matrices + 18.0 * 2 * 4 * 6 + 12.0 * 2 * 8 * 7);
}

}  // namespace
}  // namespace dew::train
