// schedule: phases switch exactly at their token budgets, resume exactly across a switch, and
// budgets that would split a batch are refused.
#include <dew/data.h>
#include <gtest/gtest.h>

#include "data_files.h"
#include "error_of.h"

namespace dew::data {
namespace {

using testing::error_of;

// Token documents whose ids say where they came from: phase p's tokens are 1000 * (p + 1) + i.
Chain phase_chain(int p) {
  std::vector<Record> docs(5);
  for (size_t d = 0; d < docs.size(); ++d)
    for (int i = 0; i < 3 + int(d); ++i) docs[d].tokens.push_back(1000 * (p + 1) + i);
  Chain chain = Chain::records(docs, {.epochs = 0});
  chain.shuffle(uint64_t(p)).pack(8).batch(2);
  return chain;
}

Chain two_phases(int64_t first_budget) {
  std::vector<Phase> phases;
  phases.push_back({phase_chain(0), first_budget});
  phases.push_back({phase_chain(1), 0});
  return Chain::schedule(std::move(phases));
}

int phase_of(const Batch& b) {
  const int64_t* t = b.tokens.data<int64_t>();
  const int first = int(t[0] / 1000) - 1;
  for (int64_t i = 0; i < b.tokens.numel(); ++i)
    EXPECT_EQ(int(t[i] / 1000) - 1, first) << "a batch mixes phases";
  return first;
}

TEST(DataSchedule, PhasesSwitchExactlyAtTheirTokenBudgets) {
  Chain chain = two_phases(48);  // 3 batches of 2 x 8 tokens
  for (int i = 0; i < 8; ++i) {
    const Batch b = *chain.next_batch();
    EXPECT_EQ(b.index, i);
    EXPECT_EQ(phase_of(b), i < 3 ? 0 : 1) << "batch " << i;
  }
  EXPECT_NE(chain.show().find("phase 0: 48 tokens"), std::string::npos) << chain.show();
}

TEST(DataSchedule, ResumingAcrossTheSwitchIsExact) {
  Chain chain = two_phases(48);
  std::vector<std::string> positions;
  std::vector<std::vector<int64_t>> tokens;
  for (int i = 0; i < 8; ++i) {
    positions.push_back(chain.position());
    const Batch b = *chain.next_batch();
    tokens.emplace_back(b.tokens.data<int64_t>(), b.tokens.data<int64_t>() + b.tokens.numel());
  }
  for (size_t k = 0; k < positions.size(); ++k) {
    Chain resumed = two_phases(48);
    resumed.resume(positions[k]);
    for (size_t i = k; i < tokens.size(); ++i) {
      const Batch b = *resumed.next_batch();
      EXPECT_EQ(b.index, int64_t(i));
      ASSERT_EQ(std::vector<int64_t>(b.tokens.data<int64_t>(), b.tokens.data<int64_t>() + b.tokens.numel()),
                tokens[i])
          << "resumed at " << k << ", batch " << i;
    }
  }
  Chain other = two_phases(64);
  EXPECT_NE(error_of([&] { other.resume(positions[2]); }).find("schedule[0].tokens: 48, now 64"),
            std::string::npos);
}

TEST(DataSchedule, BudgetsThatSplitABatchAreRefused) {
  EXPECT_NE(error_of([] { two_phases(40); }).find("not a whole number of 16-token batches"),
            std::string::npos);
  std::vector<Phase> phases;
  phases.push_back({phase_chain(0), 0});
  phases.push_back({phase_chain(1), 16});
  EXPECT_NE(error_of([&] { Chain::schedule(std::move(phases)); }).find("only the last phase may have 0"),
            std::string::npos);
  std::vector<Phase> unbatched;
  unbatched.push_back({Chain::records(std::vector<Record>(2)), 16});
  EXPECT_NE(error_of([&] { Chain::schedule(std::move(unbatched)); }).find("phase 0 does not end in batch"),
            std::string::npos);
}

TEST(DataSchedule, AConfigListsPhases) {
  testing::DataDir dir("schedule_config");
  dir.write("a.txt", "alpha beta\ngamma delta\n");
  dir.write("s.toml", R"(
[[data.phase]]
tokens = 32
source = { kind = "text", paths = ["a.txt"], unit = "line", epochs = 0 }
stage = [{ kind = "pack", T = 8 }, { kind = "batch", size = 2 }]

[[data.phase]]
source = { kind = "text", paths = ["a.txt"], unit = "line", epochs = 0 }
stage = [{ kind = "pack", T = 8 }, { kind = "batch", size = 2 }]
)");
  Chain chain = chain_from_config(dir.path("s.toml"));
  EXPECT_NE(chain.show().find("phase 0: 32 tokens"), std::string::npos) << chain.show();
  EXPECT_NE(chain.show().find("phase 1: until its chain ends"), std::string::npos);
}

}  // namespace
}  // namespace dew::data
