// mix: proportions, determinism, resume, and how a mixture is seen.
#include <dew/data.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "data_files.h"
#include "error_of.h"

namespace dew::data {
namespace {

using testing::error_of;

// A chain of records "name:0", "name:1", ... repeating forever.
Chain named(const std::string& name, int n) {
  std::vector<Record> records(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) records[size_t(i)].text = name + ":" + std::to_string(i);
  return Chain::records(records, {.epochs = 0});
}

Chain three_way(uint64_t seed) {
  std::vector<MixMember> members;
  members.push_back({"web", 6, named("web", 50)});
  members.push_back({"code", 3, named("code", 20)});
  members.push_back({"math", 1, named("math", 7)});
  return Chain::mix(std::move(members), seed);
}

TEST(DataMix, ProportionsAreWithinBinomialBounds) {
  Chain chain = three_way(11);
  const int n = 20000;
  std::map<std::string, int> counts;
  for (int i = 0; i < n; ++i) {
    const std::string text = chain.next_record()->text;
    ++counts[text.substr(0, text.find(':'))];
  }
  for (auto [name, p] : {std::pair{"web", 0.6}, {"code", 0.3}, {"math", 0.1}}) {
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_LT(std::abs(counts[name] - n * p), 4 * sigma) << name << " drawn " << counts[name] << " of " << n;
  }
  // Each member is read in its own order: the k-th draw of "math" is its record k mod 7.
  Chain again = three_way(11);
  int math = 0;
  for (int i = 0; i < 500; ++i) {
    const std::string text = again.next_record()->text;
    if (text.rfind("math:", 0) == 0) {
      EXPECT_EQ(text, "math:" + std::to_string(math++ % 7));
    }
  }
}

TEST(DataMix, SameSeedSameScheduleAndResumeIsExact) {
  Chain a = three_way(3), b = three_way(3), c = three_way(4);
  std::vector<std::string> got, other;
  std::vector<std::string> positions;
  for (int i = 0; i < 200; ++i) {
    positions.push_back(a.position());
    got.push_back(a.next_record()->text);
    EXPECT_EQ(b.next_record()->text, got.back());
    other.push_back(c.next_record()->text);
  }
  EXPECT_NE(got, other);
  for (size_t k : {0, 1, 57, 199}) {
    Chain resumed = three_way(3);
    resumed.resume(positions[k]);
    for (size_t i = k; i < 200; ++i) ASSERT_EQ(resumed.next_record()->text, got[i]) << k;
  }
  const std::string e = error_of([&] { c.resume(positions[5]); });
  EXPECT_NE(e.find("stage 0 (mix).seed: 3, now 4"), std::string::npos) << e;
}

TEST(DataMix, AMixtureEndsWithTheFirstMemberItDrawsThatHasEnded) {
  std::vector<MixMember> members;
  members.push_back({"short", 1, Chain::records(std::vector<Record>(3))});
  members.push_back({"long", 1, named("long", 10)});
  Chain chain = Chain::mix(std::move(members), 1);
  int n = 0, shorts = 0;
  while (std::optional<Record> r = chain.next_record()) ++n, shorts += r->text.empty();
  EXPECT_EQ(shorts, 3);
  EXPECT_GE(n, 3);
}

TEST(DataMix, MembersAreShownAndCountedByName) {
  Chain chain = three_way(1);
  chain.shuffle(2, 4);
  for (int i = 0; i < 30; ++i) chain.next_record();
  const std::string shown = chain.show();
  EXPECT_NE(shown.find("member code:\n    records:"), std::string::npos) << shown;
  EXPECT_NE(shown.find("mix, seed 1: web 60%, code 30%, math 10%"), std::string::npos) << shown;
  int64_t members_out = 0;
  for (const StageStats& s : chain.stats())
    if (s.stage == "web/records" || s.stage == "code/records" || s.stage == "math/records")
      members_out += s.records_out;
  EXPECT_GE(members_out, 30);
  EXPECT_NE(error_of([&] { three_way(1).shuffle(1, 0); }).find("begins with a mixture"), std::string::npos);
  std::vector<MixMember> twins;
  twins.push_back({"a", 1, named("a", 2)});
  twins.push_back({"a", 2, named("b", 2)});
  EXPECT_NE(error_of([&] { Chain::mix(std::move(twins), 0); }).find("two members are named a"),
            std::string::npos);
}

}  // namespace
}  // namespace dew::data

namespace dew::data {
namespace {

TEST(DataMix, AConfigNamesMembersWithTheirOwnSourcesAndStages) {
  testing::DataDir dir("mix_config");
  dir.write("a.txt", "a1\na2\na3\n");
  dir.write("b.txt", "b1\nb2\n");
  dir.write("mix.toml", R"(
[data.mix]
seed = 4

[data.mix.members.alpha]
weight = 3
source = { kind = "text", paths = ["a.txt"], unit = "line", epochs = 0 }
stage = [{ kind = "shuffle", seed = 1 }]

[data.mix.members.beta]
weight = 1
source = { kind = "text", paths = ["b.txt"], unit = "line", epochs = 0 }

[[data.stage]]
kind = "shuffle"
seed = 9
window = 4
)");
  Chain configured = chain_from_config(dir.path("mix.toml"));
  std::vector<MixMember> members;
  Chain alpha = Chain::text_files({dir.path("a.txt")}, TextUnit::line, {.epochs = 0});
  alpha.shuffle(1);
  members.push_back({"alpha", 3, std::move(alpha)});
  members.push_back({"beta", 1, Chain::text_files({dir.path("b.txt")}, TextUnit::line, {.epochs = 0})});
  Chain built = Chain::mix(std::move(members), 4);
  built.shuffle(9, 4);
  EXPECT_EQ(configured.description(), built.description());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(configured.next_record()->text, built.next_record()->text);
  const std::string e = error_of([&] { chain_from_config(dir.path("mix.toml"), {"data.source.kind=text"}); });
  EXPECT_NE(e.find("expected one [source] table naming the files, or one [mix] table"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace dew::data
