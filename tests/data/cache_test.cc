// The automatic cache: a miss builds the file, a hit reads it with the same batches and positions, a
// changed input misses, damaged files are rebuilt, and the directory keeps to its cap.
#include <dew/data.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "data_files.h"

namespace dew::data {
namespace {

namespace fs = std::filesystem;

std::vector<int64_t> tokens_of(const Batch& b) {
  return {b.tokens.data<int64_t>(), b.tokens.data<int64_t>() + b.tokens.numel()};
}

class Cache : public ::testing::Test {
 protected:
  Cache() : dir_("cache") {
    std::string text;
    for (int i = 0; i < 120; ++i)
      text += "line " + std::to_string(i) + " about the " + (i % 3 ? "river" : "hill") + "\n";
    dir_.write("corpus.txt", text);
    dir_.write_tokenizer("tok", text, "<|eot|>");
  }
  Chain chain(CacheOptions cache) {
    Chain c = Chain::text_files({dir_.path("corpus.txt")}, TextUnit::line, {.epochs = 0});
    c.shuffle(1).tokenize(dir_.path("tok"), {.append_eos = true}).pack(16).batch(4).cache(cache);
    return c;
  }
  CacheOptions in_dir() const { return {.dir = dir_.path("cache")}; }
  std::vector<std::vector<int64_t>> first(Chain& c, int n) {
    std::vector<std::vector<int64_t>> out;
    for (int i = 0; i < n; ++i) out.push_back(tokens_of(*c.next_batch()));
    return out;
  }
  size_t files() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_.path("cache"))) n += e.path().extension() == ".records";
    return n;
  }
  testing::DataDir dir_;
};

TEST_F(Cache, AMissBuildsTheFileAndAHitReadsTheSameBatches) {
  Chain plain = chain({.enabled = false});
  const auto want = first(plain, 12);
  EXPECT_FALSE(fs::exists(dir_.path("cache")));

  Chain miss = chain(in_dir());
  EXPECT_EQ(first(miss, 12), want);
  EXPECT_NE(miss.show().find("cache: the stages above, built into"), std::string::npos) << miss.show();
  EXPECT_EQ(files(), 1u);

  Chain hit = chain(in_dir());
  EXPECT_EQ(first(hit, 12), want);
  const std::string shown = hit.show();
  EXPECT_NE(shown.find("cache: the stages above, read from"), std::string::npos) << shown;
  EXPECT_NE(shown.find("tokenize: "), std::string::npos) << "the cached stages are still shown";
  EXPECT_EQ(hit.description(), plain.description());
  EXPECT_EQ(files(), 1u);
}

TEST_F(Cache, PositionsMoveBetweenCachedAndUncachedChains) {
  Chain plain = chain({.enabled = false});
  first(plain, 3);
  const std::string position = plain.position();
  const auto want = first(plain, 6);
  Chain cached = chain(in_dir());
  cached.resume(position);
  EXPECT_EQ(first(cached, 6), want);
  Chain back = chain({.enabled = false});
  back.resume(cached.position());
  Chain ahead = chain(in_dir());
  ahead.resume(cached.position());
  EXPECT_EQ(first(back, 4), first(ahead, 4));
}

TEST_F(Cache, AChangedInputMissesAndADamagedFileIsRebuilt) {
  Chain one = chain(in_dir());
  one.next_batch();
  dir_.write("corpus.txt", dir_.read("corpus.txt") + "one more line\n");
  Chain changed = chain(in_dir());
  changed.next_batch();
  EXPECT_NE(changed.show().find("built into"), std::string::npos);
  EXPECT_EQ(files(), 2u);
  dir_.write_tokenizer("tok", "another text entirely", "<|eot|>");
  Chain retokenized = chain(in_dir());
  retokenized.next_batch();
  EXPECT_EQ(files(), 3u);

  for (const auto& e : fs::directory_iterator(dir_.path("cache"))) fs::resize_file(e.path(), 40);
  Chain plain = chain({.enabled = false});
  Chain rebuilt = chain(in_dir());
  EXPECT_EQ(first(rebuilt, 5), first(plain, 5));
  EXPECT_NE(rebuilt.show().find("built into"), std::string::npos);
}

TEST_F(Cache, TheDirectoryKeepsToItsCapLeastRecentlyUsedFirst) {
  Chain a = chain(in_dir());
  a.next_batch();
  const uintmax_t one = fs::file_size(fs::directory_iterator(dir_.path("cache"))->path());
  dir_.write("corpus.txt", dir_.read("corpus.txt") + "x\n");
  CacheOptions capped = in_dir();
  capped.max_bytes = int64_t(one + one / 2);
  Chain b = chain(capped);
  b.next_batch();
  EXPECT_EQ(files(), 1u) << "the older file was evicted";
  EXPECT_NE(b.show().find("built into"), std::string::npos);
}

TEST_F(Cache, AConfigChoosesTheDirectoryOrOptsOut) {
  dir_.write("data.toml", R"(
[data]
cache_dir = "config_cache"
source = { kind = "text", paths = ["corpus.txt"], unit = "line" }
stage = [{ kind = "tokenize", tokenizer = "tok" }]
)");
  Chain cached = chain_from_config(dir_.path("data.toml"));
  cached.next_record();
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path("config_cache")), fs::directory_iterator()), 1);
  Chain opted_out = chain_from_config(dir_.path("data.toml"), {"data.cache=false", "data.cache_dir=elsewhere"});
  opted_out.next_record();
  EXPECT_FALSE(fs::exists(dir_.path("elsewhere")));
}

}  // namespace
}  // namespace dew::data
