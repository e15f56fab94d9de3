// The dew command end to end: exit codes and the closing line of `dew check`.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <string>

namespace {

struct Result {
  int code;
  std::string out;
};

Result run(const std::string& args) {
  std::string cmd = std::string(DEW_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  return {WEXITSTATUS(status), out};
}

TEST(Cli, CheckClosesWithPassedAndFailedCounts) {
  Result r = run("check --op cast --dtype f32");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" passed, 0 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cast"), std::string::npos);
}

TEST(Cli, UnknownOpIsAUserErrorAndBadUsageIsTwo) {
  Result r = run("check --op nosuchop");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--op nosuchop is not an operation; expected one of: matmul"), std::string::npos)
      << r.out;
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("check --dtype").code, 2);
}

TEST(Cli, OpsPrintsTheSupportMatrix) {
  Result r = run("ops");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("cpu.onednn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dtype in {f32, bf16, f16}"), std::string::npos) << r.out;
}

// docs/ops.md is printed from the registry: a stale page fails here (regenerate with
// `build/dew ops --markdown > docs/ops.md`).
TEST(Cli, DocsOpsMdMatchesTheRegistry) {
  Result r = run("ops --markdown");
  ASSERT_EQ(r.code, 0);
  FILE* f = fopen(DEW_SOURCE_DIR "/docs/ops.md", "r");
  ASSERT_NE(f, nullptr);
  std::string doc;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), f)) doc.append(buf.data(), n);
  fclose(f);
  EXPECT_EQ(doc, r.out);
}

}  // namespace
