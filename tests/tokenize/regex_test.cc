// Pre-tokenizer patterns on long texts: a valid text is never refused for its length (10 MB of spaces
// under Llama 3's pattern, whose \s*[\r\n]+ backtracks over the whole run before \s+(?!\S) takes it,
// used to fail with "match limit exceeded").
#include <gtest/gtest.h>

#include <string>

#include "tokenize/regex.h"

namespace dew::tokenize {
namespace {

TEST(Regex, TenMegabytesOfSpacesAreOneMatch) {
  const Regex pattern(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      "llama3");
  const std::string spaces(10'000'000, ' ');
  const auto spans = pattern.find_all(spaces);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0], (std::pair<size_t, size_t>{0, spaces.size()}));
  const auto split = pattern.find_all(spaces + "x");  // the last space goes with the word
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0].second, spaces.size() - 1);
}

}  // namespace
}  // namespace dew::tokenize
