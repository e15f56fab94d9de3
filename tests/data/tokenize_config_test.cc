// The chain with a real tokenizer (trained here), with 1, 2 and 4 workers and prefetch; and chains
// read from TOML configs.
#include <dew/data.h>
#include <dew/tokenizer.h>
#include <gtest/gtest.h>

#include "data_files.h"
#include "error_of.h"

namespace dew::data {
namespace {

using testing::DataDir;
using testing::error_of;

std::vector<int64_t> flat(const Batch& b) {
  std::vector<int64_t> out;
  for (const Tensor* t : {&b.tokens, &b.segment_ids, &b.positions})
    out.insert(out.end(), t->data<int64_t>(), t->data<int64_t>() + t->numel());
  return out;
}

// A directory with lines of text and a byte-level BPE trained on them, with an EOS token.
class TokenizedData : public ::testing::Test {
 protected:
  TokenizedData() : dir_("tokenized") {
    std::string text;
    const char* words[] = {"river", "stone", "quiet", "morning", "the", "of", "lantern", "north", "é", "雨"};
    for (int line = 0; line < 300; ++line) {
      for (int w = 0; w < 3 + line % 11; ++w) text += std::string(words[(line * 7 + w * 3) % 10]) + " ";
      text += std::to_string(line) + "\n";
    }
    dir_.write("corpus.txt", text);
    write_tokenizer(text, "<|eot|>");
  }
  void write_tokenizer(const std::string& text, const std::string& eos) {
    dir_.write_tokenizer("tok", text, eos);
  }
  Chain chain(int workers, int64_t prefetch = 0) {
    Chain c = Chain::text_files({dir_.path("corpus.txt")}, TextUnit::line, {.epochs = 0});
    c.shuffle(1)
        .tokenize(dir_.path("tok"), {.append_eos = true, .workers = workers})
        .pack(32)
        .shuffle(3, 5)
        .batch(4);
    if (prefetch) c.prefetch(prefetch);
    return c;
  }
  DataDir dir_;
};

TEST_F(TokenizedData, RecordsAreTheTokenizersIdsWithEos) {
  const Tokenizer tokenizer = Tokenizer::load(dir_.path("tok"));
  Chain c = Chain::text_files({dir_.path("corpus.txt")}, TextUnit::line);
  c.tokenize(dir_.path("tok"), {.append_eos = true, .workers = 3});
  Chain text = Chain::text_files({dir_.path("corpus.txt")}, TextUnit::line);
  int n = 0;
  while (std::optional<Record> r = c.next_record()) {
    std::vector<int64_t> want = tokenizer.encode(text.next_record()->text);
    want.push_back(*tokenizer.eos_id());
    ASSERT_EQ(std::vector<int64_t>(r->tokens.begin(), r->tokens.end()), want) << r->origin;
    ++n;
  }
  EXPECT_EQ(n, 300);
}

TEST_F(TokenizedData, WorkersAndPrefetchChangeNeitherBatchesNorPositions) {
  Chain one = chain(1);
  std::vector<std::vector<int64_t>> batches;
  std::vector<std::string> positions;
  for (int i = 0; i < 30; ++i) {
    batches.push_back(flat(*one.next_batch()));
    positions.push_back(one.position());
  }
  for (auto [workers, prefetch] : {std::pair{2, 0}, {4, 0}, {4, 2}}) {
    Chain other = chain(workers, prefetch);
    for (int i = 0; i < 30; ++i) {
      ASSERT_EQ(flat(*other.next_batch()), batches[size_t(i)]) << workers << " workers, batch " << i;
      ASSERT_EQ(other.position(), positions[size_t(i)]) << workers << " workers, batch " << i;
    }
  }
  for (size_t k : {0, 7, 13, 29}) {  // resumed with another worker count
    Chain resumed = chain(2, 1);
    resumed.resume(positions[k]);
    for (size_t i = k + 1; i < 30; ++i) ASSERT_EQ(flat(*resumed.next_batch()), batches[i]) << k << " " << i;
  }
}

TEST_F(TokenizedData, AnotherTokenizerRefusesThePosition) {
  Chain c = chain(1);
  c.next_batch();
  const std::string position = c.position();
  write_tokenizer(dir_.read("corpus.txt"), "<|end|>");
  Chain changed = chain(1);
  const std::string e = error_of([&] { changed.resume(position); });
  EXPECT_NE(e.find("stage 2 (tokenize).tokenizer.xxh3"), std::string::npos) << e;
}

TEST_F(TokenizedData, AConfigBuildsTheSameChain) {
  dir_.write("train.toml", R"(
[data.source]
kind = "text"
paths = ["corpus.txt"]
unit = "line"
epochs = 0

[[data.stage]]
kind = "shuffle"
seed = 1

[[data.stage]]
kind = "tokenize"
tokenizer = "tok"
append_eos = true
workers = 2

[[data.stage]]
kind = "pack"
T = 32

[[data.stage]]
kind = "shuffle"
seed = 3
window = 5

[[data.stage]]
kind = "batch"
size = 4
)");
  Chain built = chain(1);
  Chain configured = chain_from_config(dir_.path("train.toml"));
  EXPECT_EQ(configured.description(), built.description());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(flat(*configured.next_batch()), flat(*built.next_batch()));
  Chain reseeded = chain_from_config(dir_.path("train.toml"), {"data.stage.0.seed=2"});
  EXPECT_NE(reseeded.description(), built.description());
  EXPECT_NE(reseeded.show().find("seed 2"), std::string::npos) << reseeded.show();
  // A stage by its kind where it is the only one of that kind; a value's error names --set.
  EXPECT_EQ(chain_from_config(dir_.path("train.toml"), {"data.stage.tokenize.workers=3"}).description(),
            chain_from_config(dir_.path("train.toml"), {"data.stage.1.workers=3"}).description());
  EXPECT_NE(
      error_of([&] { chain_from_config(dir_.path("train.toml"), {"data.stage.shuffle.seed=2"}); })
          .find(
              "--set data.stage.shuffle.seed=2: 2 entries of kind shuffle; expected an index below 5 or one "
              "of the kinds shuffle, tokenize, pack, shuffle, batch"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              chain_from_config(dir_.path("train.toml"), {"data.stage.pack.T=long"});
            }).find("data.stage.2: T is a string (given by --set); expected an integer"),
            std::string::npos);

  EXPECT_NE(error_of([&] { chain_from_config(dir_.path("train.toml"), {"data.stage.3.windw=5"}); })
                .find("data.stage.3: unknown key windw (given by --set); did you mean window? (expected one "
                      "of kind, seed, window)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              chain_from_config(dir_.path("train.toml"), {"data.stage.9.seed=5"});
            }).find("expected an index below 5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              chain_from_config(dir_.path("train.toml"), {"data.source.kind=csv"});
            }).find("kind \"csv\"; expected \"text\", \"jsonl\", \"tokens\" or \"idx_images\""),
            std::string::npos);
  dir_.write("broken.toml", "[data.source\nkind = 1\n");
  EXPECT_NE(
      error_of([&] { chain_from_config(dir_.path("broken.toml")); }).find(dir_.path("broken.toml") + ":1:"),
      std::string::npos);
}

// A config names its tokenizer once in [tokenizer]; its text chain is the source (one epoch, whatever
// `epochs` says) and the stages before tokenize, what `dew train` trains that tokenizer on.
TEST_F(TokenizedData, AConfigsTokenizerTableServesItsStagesAndItsTextChain) {
  dir_.write("tagged.txt", "The/at jury/nn said/vbd ./.\nrain/nn fell/vbd ./.\n");
  dir_.write("named_once.toml", R"(
[tokenizer]
path = "tok"

[data.source]
kind = "text"
paths = ["tagged.txt"]
unit = "line"
epochs = 0

[[data.stage]]
kind = "strip_tags"

[[data.stage]]
kind = "tokenize"
append_eos = true

[[data.stage]]
kind = "pack"
T = 4
)");
  Chain configured = chain_from_config(dir_.path("named_once.toml"));
  Chain built = Chain::text_files({dir_.path("tagged.txt")}, TextUnit::line, {.epochs = 0});
  built.strip_tags().tokenize(dir_.path("tok"), {.append_eos = true}).pack(4);
  EXPECT_EQ(configured.description(), built.description());

  Chain text = text_chain_from_config(dir_.path("named_once.toml"));
  std::vector<std::string> read;
  while (std::optional<Record> r = text.next_record()) read.push_back(r->text);
  EXPECT_EQ(read, (std::vector<std::string>{"The jury said.", "rain fell."}));
}

}  // namespace
}  // namespace dew::data
