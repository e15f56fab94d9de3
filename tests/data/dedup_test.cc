// Exact and near dedup against planted copies, and decontamination against a held-out file.
#include <dew/data.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "data_files.h"
#include "error_of.h"

namespace dew::data {
namespace {

using testing::error_of;

std::vector<std::string> drain(Chain& chain) {
  std::vector<std::string> out;
  while (std::optional<Record> r = chain.next_record()) out.push_back(r->text);
  return out;
}

// The Jaccard similarity of two texts' character 5-gram sets, computed plainly.
double jaccard5(const std::string& a, const std::string& b) {
  std::set<std::string> x, y;
  for (size_t i = 0; i + 5 <= a.size(); ++i) x.insert(a.substr(i, 5));
  for (size_t i = 0; i + 5 <= b.size(); ++i) y.insert(b.substr(i, 5));
  size_t common = 0;
  for (const std::string& s : x) common += y.count(s);
  return double(common) / double(x.size() + y.size() - common);
}

TEST(DataDedup, ExactDedupKeepsTheFirstCopy) {
  std::vector<Record> records(6);
  const char* texts[] = {"a", "b", "a", "c", "b", "a"};
  for (size_t i = 0; i < 6; ++i) records[i].text = texts[i];
  Chain chain = Chain::records(records);
  chain.cache({.enabled = false});  // these stages' own counts, not the cache's
  chain.dedup().shuffle(3);         // dedup judges source indices, so a global shuffle may follow
  std::vector<std::string> got = drain(chain);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(chain.stats()[1].dropped, 3);
}

TEST(DataDedup, NearDedupFindsPlantedCopiesAtJaccard08) {
  std::mt19937_64 rng(7);
  auto word = [&] {
    std::string w;
    for (int i = 0, n = 3 + int(rng() % 6); i < n; ++i) w += char('a' + rng() % 26);
    return w;
  };
  std::vector<std::string> docs;
  for (int d = 0; d < 300; ++d) {
    std::string text;
    for (int w = 0; w < 150; ++w) text += word() + " ";
    docs.push_back(text);
  }
  std::set<size_t> planted;
  std::vector<Record> records;
  for (const std::string& d : docs) records.push_back({.text = d});
  for (int k = 0; k < 100; ++k) {
    const std::string& original = docs[size_t(k)];
    std::string copy = original;
    if (k >= 40) {  // 60 near copies: replace words until the 5-gram Jaccard falls to 0.8
      std::vector<std::string> words;
      for (size_t s = 0, e; (e = copy.find(' ', s)) != std::string::npos; s = e + 1)
        words.push_back(copy.substr(s, e - s));
      while (jaccard5(original, copy) > 0.81) {
        words[size_t(rng() % words.size())] = word();
        copy.clear();
        for (const std::string& w : words) copy += w + " ";
      }
      ASSERT_GE(jaccard5(original, copy), 0.77);
    }
    planted.insert(records.size());
    records.push_back({.text = copy});
  }
  testing::DataDir dir("near_dedup");
  Chain chain = Chain::records(records);
  chain.cache({.enabled = false});  // these stages' own counts, not the cache's
  chain.near_dedup({.clusters_path = dir.path("clusters.jsonl")});
  std::set<int64_t> kept;  // by source index
  while (std::optional<Record> r = chain.next_record()) kept.insert(r->index);
  size_t true_drops = 0, drops = 0;
  for (size_t i = 0; i < records.size(); ++i)
    if (!kept.count(int64_t(i))) ++drops, true_drops += planted.count(i);
  const double recall = double(true_drops) / double(planted.size()),
               precision = double(true_drops) / double(drops);
  EXPECT_GE(recall, 0.95) << true_drops << " of " << planted.size() << " planted copies dropped";
  EXPECT_GE(precision, 0.95) << drops << " dropped, " << true_drops << " of them planted";
  EXPECT_EQ(chain.stats()[1].dropped, int64_t(drops));
  const std::string clusters = dir.read("clusters.jsonl");
  EXPECT_NE(clusters.find("{\"dropped\":[\"records[300]\"],\"kept\":\"records[0]\"}"), std::string::npos)
      << clusters;
  EXPECT_NE(chain.show().find("near_dedup: MinHash of 5-grams, 20 bands x 5 rows"), std::string::npos);
}

TEST(DataDedup, DecontaminationDropsDocumentsSharingA13Gram) {
  testing::DataDir dir("decontaminate");
  dir.write("test_set.txt",
            "The quick brown fox jumps over the lazy dog while seven wizards quietly box jumping frogs.");
  std::vector<Record> records(3);
  records[0].text =
      "Intro. THE QUICK BROWN FOX, jumps over the lazy dog while seven wizards quietly box! outro";
  records[1].text = "the quick brown fox jumps over the lazy dog while seven wizards";  // 12 words of it
  records[2].text = "nothing in common at all";
  Chain chain = Chain::records(records);
  chain.cache({.enabled = false});  // these stages' own counts, not the cache's
  chain.decontaminate({dir.path("test_set.txt")});
  EXPECT_EQ(drain(chain), (std::vector<std::string>{records[1].text, records[2].text}));
  EXPECT_EQ(chain.stats()[1].dropped, 1);
}

TEST(DataDedup, DedupComesRightAfterTheSource) {
  Chain chain = Chain::records(std::vector<Record>(3));
  chain.map("m", [](Record r) { return r; });
  EXPECT_NE(
      error_of([&] { chain.dedup(); }).find("comes right after the source (or another dedup), not after map"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              Chain::records(std::vector<Record>(2)).near_dedup({.threshold = 0});
            }).find("threshold 0"),
            std::string::npos);
}

}  // namespace
}  // namespace dew::data
