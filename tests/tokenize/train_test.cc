// The byte-level BPE trainer: what it learns, that it is deterministic and lossless, and that the
// Hugging Face tokenizers.js reads its file to the same ids as Dew.
#include <dew/error.h>
#include <dew/tokenizer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/command.h"

namespace dew {
namespace {

namespace fs = std::filesystem;

// A small corpus with a skewed word distribution (so merges have an order to find).
std::vector<std::string> corpus() {
  const std::vector<std::string> words = {"the",   "tokenizer", "learns", "merges", "of",   "bytes", "and",
                                          "words", "naïve",     "café",   "日本語", "🤗", "1234",  "it's"};
  std::vector<std::string> documents;
  for (int d = 0; d < 40; ++d) {
    std::string text;
    for (int i = 0; i < 200; ++i) {
      text += words[size_t((i * i + d * 7) % 13 == 0 ? (i + d) % words.size() : (i % 3 == 0 ? 0 : i % 5))];
      text += i % 17 == 16 ? ".\n" : " ";
    }
    documents.push_back(text);
  }
  return documents;
}

std::string train(const BpeTrainOptions& options) {
  const std::vector<std::string> documents = corpus();
  return train_byte_level_bpe(std::vector<std::string_view>(documents.begin(), documents.end()), options);
}

TEST(TokenizerTrain, LearnsFrequentWordsAsSingleTokensAndRoundTripsAnyText) {
  BpeTrainOptions options;
  options.vocab_size = 300;
  options.special_tokens = {"<|endoftext|>"};
  const std::string json = train(options);
  EXPECT_EQ(json, train(options));  // deterministic
  const Tokenizer t = Tokenizer::from_json(json, "", "trained");
  EXPECT_EQ(t.vocab_size(), 300);
  EXPECT_EQ(t.encode(" tokenizer").size(), 1u);  // the most frequent words end as one token
  EXPECT_EQ(t.encode("the").size(), 1u);
  EXPECT_EQ(t.token_to_id("<|endoftext|>"), 299);
  EXPECT_TRUE(t.is_special(299));
  for (const std::string text :
       {"unseen words, ünïcödé and 🤗🤗 emoji\n\ttabs", "<|endoftext|>the end", "\xFF"}) {
    const auto ids = t.encode(text);
    EXPECT_EQ(t.decode(ids), text == std::string("\xFF") ? "\uFFFD" : text);
  }
  EXPECT_EQ(t.encode("the<|endoftext|>").back(), 299);
}

TEST(TokenizerTrain, StopsAtMinFrequencyAndRefusesTooSmallAVocabulary) {
  BpeTrainOptions options;
  options.vocab_size = 100000;
  options.min_frequency = 1000000;
  EXPECT_EQ(Tokenizer::from_json(train(options), "", "trained").vocab_size(), 256);
  options.vocab_size = 200;
  try {
    train(options);
    ADD_FAILURE() << "trained a vocabulary smaller than the byte alphabet";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 256 byte tokens"), std::string::npos) << e.what();
  }
}

TEST(TokenizerTrain, TokenizersJsReadsTheFileToTheSameIds) {
  const fs::path oracle = fs::path(DEW_SOURCE_DIR) / "tools" / "tokenizer-oracle";
  if (!fs::exists(oracle / "node_modules" / "@huggingface" / "tokenizers") ||
      std::system("node --version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "tokenizers.js is not installed (tools/setup-debian.sh installs it)";
  BpeTrainOptions options;
  options.vocab_size = 400;
  options.special_tokens = {"<|endoftext|>", "<|pad|>"};
  const fs::path dir = fs::path(::testing::TempDir()) / "dew_trained_tokenizer";
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << train(options);
  const std::vector<std::string> texts = {
      "the tokenizer learns merges of bytes", "naïve café 日本語 🤗 it's 1234",
      "unseen: Ünïcödé, ZWJ 👨‍👩‍👧 and\r\n newlines<|pad|>!", "  spaces   and\ttabs  "};
  {
    std::ofstream input(dir / "texts.jsonl");
    for (const std::string& text : texts) input << nlohmann::json(text).dump() << "\n";
  }
  const std::string command = "node " + (oracle / "encode.mjs").string() + " " + dir.string() + " < " +
                              (dir / "texts.jsonl").string();
  const CommandResult node = run_command(command);
  ASSERT_EQ(node.exit_code, 0) << node.out;
  const Tokenizer t = Tokenizer::load(dir.string());
  std::istringstream lines(node.out);
  std::string line;
  for (const std::string& text : texts) {
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_EQ(nlohmann::json::parse(line).get<std::vector<int64_t>>(), t.encode(text)) << text;
  }
}

}  // namespace
}  // namespace dew
