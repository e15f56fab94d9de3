// The tokenizer pipeline's behaviour on small tokenizer.json files written here: each split behavior,
// Metaspace, added-token flags, post-processor templates and add_bos_token, the decoders' handling of
// bytes, and refusals of what Dew does not implement.
#include <dew/error.h>
#include <dew/tokenizer.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace dew {
namespace {

using nlohmann::json;
using testing::ElementsAre;
using testing::HasSubstr;

// A character-level BPE over `alphabet` with the given merges ("a b" → "ab", ids in order).
json bpe_model(const std::string& alphabet, const std::vector<std::string>& merges) {
  json vocab = json::object();
  int64_t next = 0;
  for (char c : alphabet) vocab[std::string(1, c)] = next++;
  for (const std::string& m : merges) {
    const std::string merged = m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1);
    if (!vocab.contains(merged)) vocab[merged] = next++;
  }
  return {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
}

Tokenizer make(json spec, json config = json::object()) {
  for (const char* key : {"normalizer", "pre_tokenizer", "post_processor", "decoder"})
    if (!spec.contains(key)) spec[key] = nullptr;
  if (!spec.contains("added_tokens")) spec["added_tokens"] = json::array();
  return Tokenizer::from_json(spec.dump(), config.dump(), "test tokenizer.json");
}

// The pieces the pre-tokenizer made, seen through the tokens: merges never cross a piece boundary.
std::vector<std::string> tokens_of(const Tokenizer& t, const std::string& text) {
  std::vector<std::string> out;
  for (int64_t id : t.encode(text)) out.push_back(t.id_to_token(id));
  return out;
}

Tokenizer split_on_dash(const std::string& behavior) {
  return make(
      {{"model", bpe_model("ab-", {"a -", "- b", "- -", "a b"})},
       {"pre_tokenizer",
        {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", false}}}});
}

TEST(TokenizerSplit, EachBehaviorCutsWhereTheRustCrateDoes) {
  EXPECT_THAT(tokens_of(split_on_dash("Isolated"), "a-b"), ElementsAre("a", "-", "b"));
  EXPECT_THAT(tokens_of(split_on_dash("Removed"), "a-b"), ElementsAre("a", "b"));
  EXPECT_THAT(tokens_of(split_on_dash("MergedWithPrevious"), "a-b"), ElementsAre("a-", "b"));
  EXPECT_THAT(tokens_of(split_on_dash("MergedWithNext"), "a-b"), ElementsAre("a", "-b"));
  // Two delimiters in a row: only the last joins the text after it; Contiguous keeps the run whole.
  EXPECT_THAT(tokens_of(split_on_dash("MergedWithNext"), "a--b"), ElementsAre("a", "-", "-b"));
  EXPECT_THAT(tokens_of(split_on_dash("Contiguous"), "a--b"), ElementsAre("a", "--", "b"));
  EXPECT_THAT(tokens_of(split_on_dash("Isolated"), "ab"), ElementsAre("ab"));
}

TEST(TokenizerSplit, InvertKeepsTheMatchesAsPieces) {
  const Tokenizer t = make(
      {{"model", bpe_model("ab ", {"a b"})},
       {"pre_tokenizer",
        {{"type", "Split"}, {"pattern", {{"Regex", "[ab]+"}}}, {"behavior", "Removed"}, {"invert", true}}}});
  // Inverted and removed: the non-matches (spaces) go, the words stay whole.
  EXPECT_THAT(tokens_of(t, "ab  ab"), ElementsAre("ab", "ab"));
}

TEST(TokenizerSplit, OnigurumaWhiteSpaceIsUnicodeWhiteSpaceProperty) {
  // \s matches U+0085 and U+3000 but not U+180E (PCRE2's own \s would), as in Oniguruma. The pieces
  // show through a merge "x x": code points outside the vocabulary are dropped (no unk token), so
  // "x<U+180E>x" stays one piece and merges, while the x's split at real white space do not.
  const Tokenizer t = make(
      {{"model", bpe_model("x", {"x x"})},
       {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "\\s"}}}, {"behavior", "Removed"}}}});
  const int64_t x = t.token_to_id("x").value(), xx = t.token_to_id("xx").value();
  EXPECT_THAT(t.encode("x\u0085x\u3000x\u180ex"), ElementsAre(x, x, xx));
  EXPECT_THAT(t.encode("x\u180ex"), ElementsAre(xx));
  EXPECT_THAT(t.encode("x x\tx"), ElementsAre(x, x, x));
}

TEST(TokenizerModel, MergesAcrossMetaspaceWhenTheVocabularyHasSuch) {
  // NOTE [metaspace segments]: a line is merged per "▁"-segment only when no token could join two.
  const std::string m = "\u2581";
  const json merges =
      json::array({json::array({"a", m}), json::array({"a" + m, "b"}), json::array({m, "b"})});
  const json joined = {{"a", 0}, {m, 1}, {"b", 2}, {"a" + m, 3}, {"a" + m + "b", 4}, {m + "b", 5}};
  const Tokenizer across = make({{"model", {{"type", "BPE"}, {"vocab", joined}, {"merges", merges}}}});
  EXPECT_THAT(across.encode("a" + m + "b"), ElementsAre(4));
  const json apart = {{"a", 0}, {m, 1}, {"b", 2}, {m + "b", 5}};
  const Tokenizer segmented = make(
      {{"model", {{"type", "BPE"}, {"vocab", apart}, {"merges", json::array({json::array({m, "b"})})}}}});
  EXPECT_THAT(segmented.encode("a" + m + "b" + m + m + "b"), ElementsAre(0, 5, 1, 5));
}

json added(const std::string& content, int64_t id, bool special, json flags = json::object()) {
  json token = {{"id", id},        {"content", content},     {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", !special}, {"special", special}};
  token.update(flags);
  return token;
}

TEST(TokenizerMetaspace, SplitKeepsEachReplacementWithTheWordAfterIt) {
  const std::string m = "\u2581";
  const json vocab = {{"a", 0}, {"b", 1}, {m, 2}, {m + m, 3}, {"<x>", 9}};
  const json merges = json::array({json::array({m, m})});  // would join "▁▁" if the two stayed in one piece
  const Tokenizer t =
      make({{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
            {"pre_tokenizer",
             {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "first"}, {"split", true}}},
            {"decoder", {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "first"}}},
            {"added_tokens", {added("<x>", 9, true)}}});
  // "ab  b" → "▁ab▁▁b" → pieces "▁ab", "▁", "▁b": the two ▁ are in different pieces.
  EXPECT_THAT(t.encode("ab  b"), ElementsAre(2, 0, 1, 2, 2, 1));
  EXPECT_EQ(t.decode(t.encode("ab  b")), "ab  b");
  // Not at the start of the text (after an added token, with "first"): nothing is prepended.
  EXPECT_THAT(t.encode("<x>ab"), ElementsAre(9, 0, 1));
}

TEST(TokenizerAddedTokens, MatchedLeftmostLongestBeforeTheModel) {
  json model = bpe_model("abc<>/s ", {"a b"});
  model["vocab"]["<s>"] = 100;
  model["vocab"]["<s>>"] = 101;
  const Tokenizer t =
      make({{"model", model}, {"added_tokens", {added("<s>", 100, true), added("<s>>", 101, false)}}});
  EXPECT_THAT(t.encode("ab<s>>c<s>"), ElementsAre(t.token_to_id("ab").value(), 101, 2, 100));
  EXPECT_TRUE(t.is_special(100));
  EXPECT_FALSE(t.is_special(101));
  EXPECT_EQ(t.decode(t.encode("ab<s>>c<s>"), {.skip_special_tokens = true}), "ab<s>>c");
}

TEST(TokenizerAddedTokens, LstripAndRstripSwallowTheWhiteSpaceBeside) {
  json model = bpe_model("ab ", {});
  model["vocab"]["<m>"] = 50;
  const Tokenizer t = make(
      {{"model", model}, {"added_tokens", {added("<m>", 50, true, {{"lstrip", true}, {"rstrip", true}})}}});
  EXPECT_THAT(t.encode("a  <m>  b"), ElementsAre(0, 50, 1));
  const Tokenizer plain = make({{"model", model}, {"added_tokens", {added("<m>", 50, true)}}});
  EXPECT_THAT(plain.encode("a <m> b"), ElementsAre(0, 2, 50, 2, 1));
}

TEST(TokenizerAddedTokens, SingleWordTokensDoNotMatchInsideWords) {
  json model = bpe_model("ab ", {});
  model["vocab"]["ab"] = 60;
  const Tokenizer t =
      make({{"model", model}, {"added_tokens", {added("ab", 60, false, {{"single_word", true}})}}});
  EXPECT_THAT(t.encode("ab aab"), ElementsAre(60, 2, 0, 0, 1));
}

json bos_template() {
  return {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {10}}, {"tokens", {"<s>"}}}}}}};
}

TEST(TokenizerPostProcessor, TemplateAddsBosOnceEvenWhenTheTextHasIt) {
  json model = bpe_model("ab", {});
  model["vocab"]["<s>"] = 10;
  model["vocab"]["</s>"] = 11;
  const json tokens = {added("<s>", 10, true), added("</s>", 11, true)};
  const Tokenizer t = make({{"model", model}, {"added_tokens", tokens}, {"post_processor", bos_template()}});
  EXPECT_THAT(t.encode("ab", {.add_special_tokens = true}), ElementsAre(10, 0, 1));
  EXPECT_THAT(t.encode("ab"), ElementsAre(0, 1));
  // A decoded prompt with its BOS, encoded again: still one BOS (NOTE [no doubled BOS]).
  const std::string prompt = t.decode(t.encode("ab", {.add_special_tokens = true}));
  EXPECT_EQ(prompt, "<s>ab");
  EXPECT_THAT(t.encode(prompt, {.add_special_tokens = true}), ElementsAre(10, 0, 1));

  // tokenizer_config's add_bos_token / add_eos_token rebuild the template, as transformers does.
  const Tokenizer both =
      make({{"model", model}, {"added_tokens", tokens}, {"post_processor", bos_template()}},
           {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_bos_token", false}, {"add_eos_token", true}});
  EXPECT_THAT(both.encode("ab", {.add_special_tokens = true}), ElementsAre(0, 1, 11));
  EXPECT_EQ(both.bos_id(), 10);
  EXPECT_EQ(both.eos_id(), 11);
}

TEST(TokenizerDecoders, ByteFallbackBytesThatAreNotUtf8BecomeOneReplacementEach) {
  json model = bpe_model("a", {});
  for (int b = 0; b < 256; ++b) model["vocab"][fmt::format("<0x{:02X}>", b)] = 10 + b;
  model["byte_fallback"] = true;
  const Tokenizer t = make(
      {{"model", model},
       {"decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}}});
  // "é" is not in the vocabulary: its two UTF-8 bytes come out as byte tokens, and go back whole.
  EXPECT_THAT(t.encode("a\u00e9"), ElementsAre(0, 10 + 0xC3, 10 + 0xA9));
  EXPECT_EQ(t.decode(t.encode("a\u00e9")), "a\u00e9");
  // Half of the character: one U+FFFD per byte token (the Rust crate's rule).
  EXPECT_EQ(t.decode({10 + 0xE4, 10 + 0xB8}), "\uFFFD\uFFFD");
}

TEST(TokenizerDecoders, ByteLevelIllFormedBytesBecomeOneReplacementPerSubpart) {
  json vocab = json::object();
  const std::string text_of_0xE4 = "\u00e4", text_of_0xB8 = "\u00b8";  // bytes ≥ 0xAE print as themselves
  vocab[text_of_0xE4] = 0;
  vocab[text_of_0xB8] = 1;
  vocab["a"] = 2;
  const Tokenizer t = make({{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
                            {"decoder", {{"type", "ByteLevel"}}}});
  EXPECT_EQ(t.decode({0, 1, 2}), "\uFFFDa");  // E4 B8 is one truncated sequence
}

TEST(TokenizerEncode, IllFormedUtf8IsReplacedBeforeEncoding) {
  json model = bpe_model("ab", {});
  for (int b = 0; b < 256; ++b) model["vocab"][fmt::format("<0x{:02X}>", b)] = 10 + b;
  model["byte_fallback"] = true;
  const Tokenizer t = make({{"model", model}});
  // 0xFF is never UTF-8: it becomes U+FFFD (EF BF BD), encoded by byte fallback.
  EXPECT_EQ(t.encode("a\xFF"
                     "b"),
            t.encode("a\uFFFD"
                     "b"));
  EXPECT_THAT(t.encode("a\xFF"
                       "b"),
              ElementsAre(0, 10 + 0xEF, 10 + 0xBF, 10 + 0xBD, 1));
}

std::string refusal(const json& spec, const json& config = json::object()) {
  try {
    make(spec, config);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(TokenizerRefusals, UnsupportedComponentsAreNamedWithTheFile) {
  const json model = bpe_model("ab", {"a b"});
  EXPECT_THAT(
      refusal({{"model", model}, {"normalizer", {{"type", "Lowercase"}}}}),
      testing::AllOf(HasSubstr("test tokenizer.json normalizer Lowercase"), HasSubstr("not implemented")));
  EXPECT_THAT(refusal({{"model", model}, {"pre_tokenizer", {{"type", "BertPreTokenizer"}}}}),
              HasSubstr("pre_tokenizer BertPreTokenizer: not implemented"));
  EXPECT_THAT(refusal({{"model", {{"type", "WordPiece"}, {"vocab", json::object()}}}}),
              HasSubstr("the model type \"WordPiece\" is not implemented"));
  EXPECT_THAT(refusal({{"model", model}, {"decoder", {{"type", "CTC"}}}}),
              HasSubstr("decoder CTC: not implemented"));
  EXPECT_THAT(refusal({{"model", model}, {"post_processor", {{"type", "Weird"}}}}),
              HasSubstr("post_processor Weird: not implemented"));
  EXPECT_THAT(
      refusal({{"model", model}, {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "[a[b]]"}}}}}}),
      HasSubstr("nests a character class"));
  EXPECT_THAT(
      refusal({{"model", model}, {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}}}}),
      HasSubstr("does not compile"));
  // A huge pattern is quoted in part, once, under one prefix (the message was 258 KB, "[tokenizer]" twice).
  std::string huge;
  for (int i = 0; i < 20000; ++i) huge += "(?:a{1,60000}){1,60000}";
  const std::string too_large =
      refusal({{"model", model}, {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", huge}}}}}});
  EXPECT_THAT(too_large, HasSubstr("does not compile: regular expression is too large"));
  EXPECT_THAT(too_large, HasSubstr("... (460000 bytes)"));
  EXPECT_LT(too_large.size(), 600u) << too_large;
  EXPECT_EQ(too_large.find("[tokenizer]"), too_large.rfind("[tokenizer]")) << too_large;
  EXPECT_THAT(refusal({{"model", bpe_model("ab", {"a c"})}}), HasSubstr("not in the vocab"));
  EXPECT_THAT(refusal({{"model", model}, {"truncation", {{"max_length", 8}}}}),
              HasSubstr("\"truncation\" is set"));
  EXPECT_THAT(refusal({{"model", model}}, {{"add_bos_token", true}}), HasSubstr("bos_token names no token"));
  EXPECT_THAT(refusal({{"model", {{"type", "BPE"}, {"vocab", {{"a", "zero"}}}, {"merges", json::array()}}}}),
              HasSubstr("expected a non-negative integer"));
  // An id far past the entry count is refused before a table is sized by it (2^31 - 1 took 64 GB).
  EXPECT_THAT(
      refusal({{"model",
                {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 2147483647}}}, {"merges", json::array()}}}}),
      HasSubstr("has id 2147483647; expected a non-negative integer below 65538 (its 2 entries"));
  EXPECT_THAT(refusal({{"model", {{"vocab", {{"a", 0}}}}}}),
              HasSubstr("model: no \"type\" and no \"merges\"; expected a BPE model"));
  // A post-processor adding an id outside the vocabulary is refused, not encoded (fuzzing found it).
  EXPECT_THAT(refusal({{"model", model},
                       {"post_processor",
                        {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {999}}}}}}}}}),
              HasSubstr("post_processor: it adds id 999, which is not in the vocabulary"));
  // An id past any integer (parsed as a float) is refused by name, not converted (fuzzing found it: a
  // float-to-integer conversion out of range, undefined behaviour).
  EXPECT_THAT(refusal({{"model", model},
                       {"post_processor",
                        {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {7.4e30}}}}}}}}}),
              HasSubstr("the special token \"<s>\" has the id 7.4e+30; expected an integer"));
  EXPECT_THAT(refusal({{"model", model}, {"added_tokens", {{{"id", 2147483647}, {"content", "<x>"}}}}}),
              HasSubstr("added_tokens: \"<x>\" has id 2147483647; expected an id below"));
}

TEST(TokenizerRefusals, BadFilesAndIdsAreErrors) {
  EXPECT_THROW(Tokenizer::from_json("{\"model\": ", "", "truncated.json"), Error);
  EXPECT_THROW(Tokenizer::load("/nonexistent/tokenizer.json"), Error);
  const Tokenizer t = make({{"model", bpe_model("ab", {})}});
  try {
    t.decode({0, 7});
    ADD_FAILURE() << "decoded an id outside the vocabulary";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("id 7 is not in the vocabulary"));
  }
}

}  // namespace
}  // namespace dew

namespace dew {
namespace {

// A byte-level tokenizer without merges: one token per byte, so characters split across tokens.
Tokenizer bytes_tokenizer() {
  BpeTrainOptions options;
  options.min_frequency = 1 << 30;
  return Tokenizer::from_json(train_byte_level_bpe({"x"}, options), "", "bytes");
}

std::string stream_all(const Tokenizer& t, const std::string& text, const std::vector<std::string>& stops,
                       std::vector<std::string>* chunks = nullptr, bool* stopped = nullptr) {
  TextStream stream(t, stops);
  std::string out;
  for (int64_t id : t.encode(text)) {
    const std::string chunk = stream.push(id);
    if (chunks) chunks->push_back(chunk);
    out += chunk;
    if (stream.stopped()) break;
  }
  out += stream.finish();
  if (stopped) *stopped = stream.stopped();
  return out;
}

TEST(TokenizerTextStream, ReturnsTheWholeTextAndNeverHalfACharacter) {
  const Tokenizer t = bytes_tokenizer();
  std::vector<std::string> chunks;
  EXPECT_EQ(stream_all(t, "naïve 🤗!", {}, &chunks), "naïve 🤗!");
  // "ï" is two byte tokens and "🤗" four: nothing comes out until the last byte of each.
  EXPECT_THAT(chunks, ElementsAre("n", "a", "", "ï", "v", "e", " ", "", "", "", "🤗", "!"));
}

TEST(TokenizerTextStream, StopsAtAStopStringSpanningTokens) {
  const Tokenizer t = bytes_tokenizer();
  bool stopped = false;
  std::vector<std::string> chunks;
  EXPECT_EQ(stream_all(t, "answer: 42\nUser: more", {"\nUser:", "never"}, &chunks, &stopped), "answer: 42");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(stream_all(t, "a\nUse b", {"\nUser:"}, nullptr, &stopped), "a\nUse b");  // a prefix, then not
  EXPECT_FALSE(stopped);
  EXPECT_EQ(stream_all(t, "aab", {"ab", "aab"}, nullptr, &stopped), "");  // the earliest stop wins
  EXPECT_TRUE(stopped);
  EXPECT_THROW(TextStream(t, {""}), Error);
}

}  // namespace
}  // namespace dew
